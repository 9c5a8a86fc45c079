"""The record of every run into one output folder: an append-only journal, and a lock so that runs take turns.

    with Journal(out, {"extractor": "ensemble", "format": "txt"}, resume=True) as journal:
        journal.append({"id": "a", "status": "ok", ...})      # one line per page, as it is done
        journal.sync()                                        # flushed and fsync'd (after every window)
        totals, pages = journal.summary()                     # every page ever done here, its latest line

`OUT/report.pages.jsonl` holds a header line for each run (its extractor, format and checkpoint) and then a line
per page; a resumed run appends to it, so report.json (outputs.py) covers every page of the folder, old and
new, and a killed run loses at most the lines of the window it was in. A run is refused when the folder's last
run used other settings (its outputs would mix), and while another run holds `OUT/.bodyblocks.lock`. Both files
are written in place, so either one that is a link (or has other names) refuses the run (files.LinkRefused).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bodyblocks.runtime.files import open_in_place, refuse_links

JOURNAL = "report.pages.jsonl"
SHARD_SUFFIXES = (".parquet", ".jsonl")  # a columnar format's output (columnar.COLUMNAR)
LOCK = ".bodyblocks.lock"


class FolderBusy(RuntimeError):
    """Another run is writing to the output folder."""


class SettingsMismatch(ValueError):
    """The folder's earlier run used another extractor, format or checkpoint."""


class OutputUnwritable(RuntimeError):
    """The output folder takes no more writes (a full disk, a quota): the run stops, with what it has written."""


class Journal:
    """The output folder's journal (module docstring); a context manager that holds the folder's lock."""

    def __init__(self, out: Path, settings: dict[str, Any], resume: bool = True) -> None:
        self.out, self.settings, self.resume = out, settings, resume
        self.path = out / JOURNAL
        self.index: dict[str, int] = {}  # page id -> byte offset of its latest line (memory: per page, not line)
        # the shard files (columnar formats: their names) that the folder's page lines name, this run's included
        self.shards: set[str] = set()
        self._lock: Any = None
        self._fh: Any = None
        self._reader: Any = None  # for `line`, opened at its first call

    def __enter__(self) -> Journal:
        self._lock = _take_lock(self.out / LOCK)
        try:
            refuse_links(self.out, self.path, itself=True)  # before it is read: its index names the shards to remove
        except OSError:
            self.close()
            raise
        if not self.resume and self.path.exists():  # the shards the earlier runs wrote, to be replaced
            self._read_index()
            self.index.clear()
        elif self.resume and self.path.exists():
            last = self._read_index()
            if last is not None and last != self.settings:
                self.close()
                raise SettingsMismatch(
                    f"{self.out} holds the outputs of a run with {_describe(last)}, not {_describe(self.settings)}: "
                    "use another --out, or --no-resume to redo every page there")
        try:
            fd = open_in_place(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if self.resume else os.O_TRUNC))
        except OSError:
            self.close()
            raise
        self._fh = os.fdopen(fd, "ab")
        self._write({"run": self.settings})
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_index(self) -> dict[str, Any] | None:
        """Index the journal's page lines; returns the settings of its last run (None: none recorded)."""
        last = None
        with open(self.path, "rb") as fh:
            offset = 0
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:  # half a line from a killed run
                    rec = None
                if isinstance(rec, dict) and "run" in rec:
                    last = rec["run"]
                elif isinstance(rec, dict) and isinstance(rec.get("id"), str):
                    self.index[rec["id"]] = offset
                    self._named(rec)
                offset += len(raw)
        return last

    def _write(self, rec: dict[str, Any], flush: bool = False) -> int:
        try:
            offset = self._fh.tell()
            self._fh.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
            if flush:
                self._fh.flush()
        except OSError as exc:
            raise OutputUnwritable(f"cannot write to {self.out}: {exc.strerror or exc}") from exc
        return offset

    def _named(self, rec: dict[str, Any]) -> None:
        """Note the shard a page line names (journal.shards)."""
        output = rec.get("output")
        if isinstance(output, str) and output.endswith(SHARD_SUFFIXES):
            self.shards.add(os.path.basename(output))

    def has(self, key: str) -> bool:
        """Whether a page has a line already."""
        return key in self.index

    def append(self, rec: dict[str, Any]) -> None:
        """One page's line (its latest: it replaces an earlier one in the summary), handed to the OS at once:
        a killed run loses no line it wrote (a crash of the machine, those since the last `sync`)."""
        self.index[rec["id"]] = self._write(rec, flush=True)
        self._named(rec)

    def sync(self) -> None:
        """The lines written so far, on disk."""
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise OutputUnwritable(f"cannot write to {self.out}: {exc.strerror or exc}") from exc

    def line(self, key: str) -> dict[str, Any] | None:
        """A page's latest line (None: it has none, or half a line from a killed run)."""
        offset = self.index.get(key)
        if offset is None:
            return None
        if self._reader is None:
            self._reader = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._reader.seek(offset)
        try:
            rec = json.loads(self._reader.readline())
        except ValueError:
            return None
        return rec if isinstance(rec, dict) else None

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every page's latest line, in the order the pages were first recorded."""
        if self._fh is not None:
            self._fh.flush()
        with open(self.path, "rb") as fh:
            for offset in self.index.values():
                fh.seek(offset)
                yield json.loads(fh.readline())

    def close(self) -> None:
        """Close the journal and release the lock (a journal the disk no longer takes is closed all the same)."""
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:  # the write that failed has raised OutputUnwritable already
                pass
            self._fh = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._lock is not None:
            _release_lock(self.out / LOCK, self._lock)
            self._lock = None


def _take_lock(path: Path) -> Any:
    """The output folder's lock, held until the file is closed (also when the process dies); None where the
    system has no fcntl (not POSIX). The lock file is removed when the run ends (_release_lock): a lock taken
    on a file that was removed meanwhile is let go and taken again on the file now at `path`."""
    try:
        import fcntl
    except ImportError:
        return None
    while True:
        fh = os.fdopen(open_in_place(path, os.O_RDWR | os.O_CREAT), "r+")
        try:
            # a POSIX record lock: owned by this process alone, so the worker processes it forks do not hold it
            # (with flock, a worker outliving a kill -9 of the run kept the folder busy)
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise FolderBusy(f"{path.parent} is being written by another bodyblocks run ({holder}); "
                             "wait for it or use another --out") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino
        except FileNotFoundError:  # the run that held it removed it after this one opened it
            same = False
        if same:
            break
        fh.close()
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()}\n")
    fh.flush()
    return fh


def _release_lock(path: Path, fh: Any) -> None:
    """Remove the lock file, then let go of the lock (in that order: a run that opened the file before it was
    removed finds it gone once it holds the lock, and takes the lock again on a new file: _take_lock)."""
    try:
        os.unlink(path)
    except OSError:  # gone already, or a folder that takes no more changes: the lock still goes with the file
        pass
    fh.close()


def _describe(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in settings.items() if v is not None)
