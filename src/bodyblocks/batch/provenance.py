"""Which input an output folder's report line was made from, and whether that input is still as it was.

    same_input(line, job)     # the line is this job's page (the same file, or WARC record), keys.FolderKeys asks
    unchanged(line, job)      # and its file has not changed since (size, modification time): resume skips it

A page file's size and modification time in ns (inputs.stamp, taken before the file is read) are in its report
line (`stamped`), so that a file edited in place since its output was made is extracted again on resume.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

from bodyblocks.batch.inputs import Job, printable


def stamped(job: Job) -> dict[str, int]:
    """A page file's size and modification time as its report line records them (`unchanged` compares them)."""
    return {} if job.stamp is None else {"input_size": job.stamp[0], "input_mtime_ns": job.stamp[1]}


def unchanged(line: dict[str, Any], job: Job) -> bool:
    """Whether the page file is as it was when the line's output was made from it: the same size and modification
    time (a line that does not say, from an older version, is taken as unchanged)."""
    if "input_size" not in line or "input_mtime_ns" not in line or job.path is None:
        return True
    return job.stamp == (line["input_size"], line["input_mtime_ns"])


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
