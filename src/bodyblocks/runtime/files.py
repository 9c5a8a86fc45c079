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

REPO_ROOT = Path(__file__).resolve().parents[3]  # src/bodyblocks/runtime/files.py -> the repository
ENV_DATASETS = "BODYBLOCKS_DATASETS"


def datasets_root() -> Path | None:
    """The shared datasets folder: $BODYBLOCKS_DATASETS, else <repo>/../shared/datasets; None when absent."""
    root = datasets_root_path()
    return root if root.is_dir() else None


def datasets_root_path() -> Path:
    """Where the shared datasets folder is looked for ($BODYBLOCKS_DATASETS, else <repo>/../shared/datasets),
    there or not."""
    env = os.environ.get(ENV_DATASETS)
    return Path(env) if env else REPO_ROOT.parent / "shared" / "datasets"


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """A temporary path beside `target` to write to; renamed over `target` when the block ends without an
    error, removed when it raises. The target's folder is created."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(_tmp_name(path.name))
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _tmp_name(name: str) -> str:
    """The temporary name beside a target named `name`: one per process and writer thread."""
    return f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"


def write_atomic(target: str | Path, data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to `target` atomically (as atomic_path: a temporary file beside it, renamed over
    it when complete; the target's folder is created).

    A batch run writes a file per page, so the common case goes straight to the system calls (open, write, close,
    rename: no test of the folder, no text layer); whatever fails there is done again through atomic_path, which
    creates a missing folder and raises what a write that cannot be done raises."""
    if isinstance(data, str):  # as a text file writes it: UTF-8, its line ends the system's
        data = (data if os.linesep == "\n" else data.replace("\n", os.linesep)).encode("utf-8")
    name = os.fspath(target)
    folder, base = os.path.split(name)
    if base:
        tmp = os.path.join(folder, _tmp_name(base))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError:  # no such folder (yet), or one that takes no file: atomic_path says which
            pass
        else:
            try:
                try:
                    with memoryview(data) as view:
                        while view:
                            view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
                os.replace(tmp, name)
                return
            except OSError:
                _unlink(tmp)
    with atomic_path(target) as path:
        path.write_bytes(data)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_json(target: str | Path, obj: Any) -> None:
    """`obj` as indented JSON (non-ASCII kept as is) with a final newline, written atomically."""
    write_atomic(target, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
