"""Which input an output folder's report line was made from, and whether that input is still as it was.

    same_input(line, job)     # the line is this job's page (the same file, or WARC record), keys.FolderKeys asks
    unchanged(line, job)      # and its file has not changed since: resume skips it

A page file's size and modification time in ns (inputs.stamp, taken before the file is read) and the SHA-256 of
the bytes the worker read (a .gz page's decompressed) are in its report line (`stamped`). On resume a file of
the line's size and time is unchanged, one of another size changed; one of the same size and another time (copied
or touched again) is read and hashed, and unchanged only when its SHA-256 is the line's.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from typing import Any

from bodyblocks.batch.inputs import Job, printable
from bodyblocks.page.decode import read_bytes


def digest(data: bytes | str) -> str:
    """The digest of a page's bytes as read (the worker's read_bytes: a .gz page's decompressed)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def stamped(job: Job) -> dict[str, Any]:
    """A page file's size, modification time and digest as its report line records them (`unchanged`)."""
    rec: dict[str, Any] = {} if job.stamp is None else {"input_size": job.stamp[0], "input_mtime_ns": job.stamp[1]}
    if job.digest is not None:
        rec["input_sha256"] = job.digest
    return rec


def unchanged(line: dict[str, Any], job: Job) -> bool:
    """Whether the page file is as it was when the line's output was made from it (module docstring); a line that
    does not say, from an older version, is taken as unchanged."""
    if "input_size" not in line or "input_mtime_ns" not in line or job.path is None:
        return True
    if job.stamp == (line["input_size"], line["input_mtime_ns"]):
        return True
    if job.stamp is None or job.stamp[0] != line["input_size"] or not isinstance(line.get("input_sha256"), str):
        return False
    try:
        return digest(read_bytes(job.path)) == line["input_sha256"]
    except (OSError, ValueError):  # unreadable now: done again, to fail with its reason
        return False


def same_input(line: dict[str, Any], job: Job) -> bool:
    """Whether a page's journal line was made from this job's input: the same WARC record, and the same file, its
    path as given or one ending like it (the same inputs named from another folder); a line that does not say
    (from an older version) is taken as the same."""
    if "record_id" in line and line["record_id"] != job.record_id:
        return False
    was = line.get("input")
    if not isinstance(was, str) or job.path is None:
        return True
    before, now = Path(os.path.normpath(was)), Path(os.path.normpath(printable(job.path)))
    if before == now or (before.is_absolute() and now.is_absolute()):
        return before == now
    short, long = sorted((before.parts, now.parts), key=len)
    short = tuple(itertools.dropwhile(lambda part: part in ("..", "/"), short))
    return bool(short) and long[len(long) - len(short):] == short
