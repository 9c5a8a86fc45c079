"""What a run's outputs were made with: the extractor, its checkpoint and preset, the engine, the version, the
model's hash. report.json records it; `bodyblocks extract` says it on its first line.

    info = describe("ensemble", checkpoint="fast", engine="onnx")
    info["preset"], info["checkpoint"], info["model_sha256"]          # "fast", ".../ensemble-fast", "3f2a..."
    headline(info)      # "ensemble (preset fast: .../checkpoints/ensemble-fast) on onnx, bodyblocks 0.1.0"
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from bodyblocks.inference.checkpoints import (
    ENSEMBLE,
    ENV_MODEL,
    KINDS,
    PRESETS,
    kind_of,
    read_ensemble,
    resolve,
    shipped,
)
from bodyblocks.inference.integrity import file_sha256
from bodyblocks.inference.options import ExtractOptions

_HASHED = ("config.json", "model.safetensors")  # per folder: the settings and the weights (exports derive from them)


def describe(name: str, checkpoint: str | os.PathLike[str] | None = None, engine: str | None = None
             ) -> dict[str, Any]:
    """The run's model (module docstring). `name`: the extractor; `checkpoint`: what --checkpoint named (a
    preset, a kind or a folder; None: $BODYBLOCKS_MODEL, else the shipped one of that kind); `engine`: what runs
    the model ("onnx", "torch"; "none" for the trees alone). Extractors without a checkpoint get None there."""
    from bodyblocks.version import __version__

    info: dict[str, Any] = {"extractor": name, "preset": None, "checkpoint": None, "engine": engine,
                            "bodyblocks": __version__, "model_sha256": None}
    if name not in KINDS:
        return info
    spec = checkpoint if checkpoint is not None else (None if os.environ.get(ENV_MODEL) else name)
    folder = resolve(spec)
    info["checkpoint"] = str(folder.resolve())
    info["preset"] = preset_of(folder)
    info["model_sha256"] = model_hash(folder)
    return info


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


def describe_extractor(name: str, options: ExtractOptions, extractor: Any) -> dict[str, Any]:
    """`describe` of a built extractor and the options it was built with: its engine read from it (the model's;
    "none": the trees alone)."""
    engine = None
    if name in KINDS:
        model = getattr(extractor, "model", None)
        engine = model.engine if model is not None else "none"  # (inputs.Scorer)
    return describe(name, options.checkpoint, engine)
