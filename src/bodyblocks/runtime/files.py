"""Where the project's files live and how they are written: atomic writes, the datasets root.

Every file the package writes (outputs, reports, checkpoints, caches) goes through `atomic_path`: written
beside its target under a temporary name, renamed over it only when complete, so a killed run never leaves
half a file and a reader never sees one. The temporary is created afresh (O_EXCL, O_NOFOLLOW), so that a link
standing at its name is never written through; `refuse_links` checks the folders below an output folder.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]  # src/bodyblocks/runtime/files.py -> the repository
ENV_DATASETS = "BODYBLOCKS_DATASETS"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # 0 where the system has none (Windows): links are checked by lstat there
# a new file, never one (or a link) that stands at the name already
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class LinkRefused(OSError):
    """A symbolic link (or a file with other names) where an output folder's file or folder is to be written:
    nothing is written through one, as it would land outside the folder."""


def refuse_links(root: str | Path, target: str | Path, itself: bool = False) -> None:
    """Raise LinkRefused when a folder of `target` below `root` (and, with `itself`, `target` itself) is a
    symbolic link; folders not there yet are fine (they are made as real folders). `root` itself is the user's
    to name, a link or not."""
    rel = Path(target).relative_to(root)
    parts = rel.parts if itself else rel.parts[:-1]
    here = Path(root)
    for part in parts:
        here = here / part
        try:
            info = os.lstat(here)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise link_refused(here)


def link_refused(path: str | Path, why: str = "is a symbolic link") -> LinkRefused:
    """The error for a link at `path` in an output folder (one line, naming it)."""
    return LinkRefused(f"{path} {why}: nothing is written through it, as that would write outside the output "
                       "folder (remove it, or use another --out)")


def open_new(path: str | Path) -> int:
    """A descriptor of a new, empty file at `path`, for writing: whatever stands there (a killed process's
    temporary of the same name, a link) is removed first, never written through."""
    try:
        return os.open(path, _NEW, 0o666)
    except FileExistsError:
        os.unlink(path)
        return os.open(path, _NEW, 0o666)


def open_in_place(path: str | Path, flags: int) -> int:
    """A descriptor of the file at `path` to write in place (a lock, a journal: appended to, or truncated),
    created if missing; LinkRefused when `path` is a symbolic link or a file with more than one name (writing
    it would write the file it stands for, wherever that is)."""
    try:
        fd = os.open(path, flags | NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
            raise link_refused(path) from None
        raise
    if os.fstat(fd).st_nlink > 1 or (not NOFOLLOW and os.path.islink(path)):
        os.close(fd)
        raise link_refused(path, "has other names (a hard link)")
    return fd


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
    os.close(open_new(tmp))  # what the caller writes there is this new file's, never a link's target
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
            fd = os.open(tmp, _NEW, 0o666)
        except OSError:  # no such folder (yet), one that takes no file, a name taken: atomic_path sees to it
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
