"""Folders of any depth made, walked and removed without recursion, and snapshots of a folder's
entries (what the run may not change)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def deep_chain(top: bytes | str | Path, levels: int, pages: dict[int, bytes]) -> None:
    """TOP/d/d/.../d, LEVELS folders, and `pages[level]` as page.html in the folder of that level (0: TOP, LEVELS:
    the bottom): made through folder descriptors, so that no path is ever that long and nothing recurses."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for level in range(levels + 1):
            if level in pages:
                out = os.open("page.html", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(out, pages[level])
                os.close(out)
            if level < levels:
                os.mkdir("d", dir_fd=fd)
                fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
                os.close(old)
    finally:
        os.close(fd)


def remove_deep(folder: Path) -> None:
    """Remove a folder however deep, without recursion (shutil.rmtree recurses once a level)."""
    stack = [os.fsencode(folder)]
    while stack:
        subs = [e.path for e in os.scandir(stack[-1]) if e.is_dir(follow_symlinks=False)]
        if subs:
            stack.extend(subs)
            continue
        for e in os.scandir(stack[-1]):
            os.unlink(e.path)
        os.rmdir(stack.pop())


def entries(root: Path, skip: Path | None = None) -> list[tuple[bytes, os.stat_result]]:
    """Every entry under ROOT but SKIP, by path (bytes: names need not be UTF-8), with its lstat; walked with a
    stack (os.walk recurses once a level: IN/deep is deeper than Python's recursion limit)."""
    found = []
    stack, bskip = [os.fsencode(root)], os.fsencode(skip) if skip is not None else None
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                items = list(listing)
        except OSError:  # an unreadable folder
            continue
        for e in items:
            if e.path == bskip:
                continue
            st = os.lstat(e.path)
            found.append((e.path, st))
            if stat.S_ISDIR(st.st_mode):
                stack.append(e.path)
    return found


def snapshot(root: Path, skip: Path) -> dict[bytes, tuple[int, int, int]]:
    """Every entry under ROOT but SKIP: (type, size, mtime) by relative path (bytes: names need not be UTF-8)."""
    broot = os.fsencode(root)
    return {os.path.relpath(p, broot): (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
            for p, st in entries(root, skip)}
