"""Where the project's files live and how they are written: atomic writes, the datasets root.

Every file the package writes (outputs, reports, checkpoints, caches) goes through `atomic_path`: written
beside its target under a temporary name, renamed over it only when complete, so a killed run never leaves
half a file and a reader never sees one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]  # src/bodyblocks/files.py -> the repository
ENV_DATASETS = "BODYBLOCKS_DATASETS"


def datasets_root() -> Path | None:
    """The shared datasets folder: $BODYBLOCKS_DATASETS, else <repo>/../shared/datasets; None when absent."""
    env = os.environ.get(ENV_DATASETS)
    root = Path(env) if env else REPO_ROOT.parent / "shared" / "datasets"
    return root if root.is_dir() else None


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """A temporary path beside `target` to write to; renamed over `target` when the block ends without an
    error, removed when it raises. The target's folder is created."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer thread
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(target: str | Path, data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to `target` atomically."""
    with atomic_path(target) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")


def write_json(target: str | Path, obj: Any) -> None:
    """`obj` as indented JSON (non-ASCII kept as is) with a final newline, written atomically."""
    write_atomic(target, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
