"""What a run's outputs were made with: the checkpoint's preset and its model's hash, and the one line that says
it. report.json records a plan's description (loading/plan.py: Plan.describe); `bodyblocks extract` says it
on its first line.

    preset_of(folder)   # "fast" for the shipped checkpoints/ensemble-fast, None for a folder of one's own
    model_hash(folder)  # "3f2a...": over config.json and model.safetensors of the folder and its parts
    headline(info)      # "ensemble (preset fast: .../ensemble-fast, sha256 3f2a...) on onnx, bodyblocks 0.1.0"
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from bodyblocks.classify.integrity import file_sha256
from bodyblocks.loading.checkpoints import ENSEMBLE, KINDS, PRESETS, kind_of, read_ensemble, shipped

_HASHED = ("config.json", "model.safetensors")  # per folder: the settings and the weights (exports derive from them)


def preset_of(folder: Path) -> str | None:
    """The shipped kind or preset a folder is ("fast", "ensemble", "gbt", ...), None for one of the user's."""
    here = folder.resolve()
    for name in (*PRESETS, *KINDS):
        found = shipped(name)
        if found is not None and found.resolve() == here:
            return name
    return None


def model_hash(folder: Path) -> str:
    """SHA-256 over the config.json and model.safetensors of a checkpoint folder and, for an ensemble, of its
    model's and trees' folders: over each file's place, name and SHA-256 (integrity.file_sha256, which the load's
    own check of the weights has computed already in this process, so they are not read again)."""
    folders = [folder]
    if kind_of(folder) == ENSEMBLE:
        meta = read_ensemble(folder)
        folders += [meta["model_path"], meta["gbt_path"]]
    digest = hashlib.sha256()
    for i, part in enumerate(folders):
        for name in _HASHED:
            path = part / name
            if path.is_file():
                digest.update(f"{i}/{name}:{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def headline(info: dict[str, Any]) -> str:
    """One line: which model runs on which engine (the first line `bodyblocks extract` prints)."""
    what = info["extractor"]
    if info["checkpoint"]:
        label = f"preset {info['preset']}: " if info["preset"] and info["preset"] != what else ""
        what += f" ({label}{info['checkpoint']}, sha256 {info['model_sha256'][:12]})"
    engine = info["engine"]
    on = f" on {engine}" if engine and engine != "none" else (" (trees on the CPU)" if engine == "none" else "")
    return f"{what}{on}, bodyblocks {info['bodyblocks']}"
