"""Columnar output for many pages: Parquet or JSON Lines shards of up to `shard_size` rows, one row per page.

    shards = ShardWriter(out, "parquet", shard_size=10_000)
    shards.add(job.source, job.position, row)      # rows in input order; a finished shard is renamed into place
    shards.close(complete=True)                    # the last shards too (False: an interrupted run drops them)

A shard is named from its input and its place in it, `<source>-<shard:05d>.parquet` (or .jsonl), holding the
pages at positions shard * shard_size .. (shard + 1) * shard_size - 1. A batch run into a folder places each
input's pages after the shards the folder holds of that input already (`place`: a resumed run writes the pages
not yet written, new ones included, into shards of their own and never rewrites a complete one); a --no-resume
run removes the earlier runs' shards first (`start`) and numbers from 0 again. A shard is written beside its
final name and renamed there only once complete, so a shard file that exists is complete; a temporary left by a
killed run is removed by the next (`start`). pyarrow is imported only for Parquet (the `scale` extra).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bodyblocks.runtime.extras import require
from bodyblocks.runtime.files import open_new

COLUMNAR = {"parquet": ".parquet", "jsonl": ".jsonl"}
SHARD_SIZE = 10_000  # pages per shard file
ROW_GROUP = 1_000  # rows per Parquet row group (and per write of a JSON Lines shard)
# one row per page; `flags`: low_confidence, no_body, truncated, replaced, guessed, error_page, hidden_source;
# `error` "reason: message" or null;
# `standfirst`: the summary paragraph under the headline, apart from `text` (null where the page has none);
# `captions`, `comments`: the article's figure captions and its readers' comments, apart from `text` (lists);
# author .. canonical_url: what the page states about itself (metadata.py), null where it states nothing;
# `page_kind`: the predicted kind of page (classify/pagekind.py: article, forum, product, ...)
COLUMNS = ("id", "url", "record_id", "title", "standfirst", "text", "captions", "comments", "markdown", "author",
           "date", "site_name", "canonical_url", "language", "page_kind", "encoding", "confidence", "flags", "error")


def schema() -> Any:
    """The Parquet shards' pyarrow schema (COLUMNS)."""
    pa = require("pyarrow", "Parquet output")
    text = pa.string()
    return pa.schema([("id", text), ("url", text), ("record_id", text), ("title", text), ("standfirst", text),
                      ("text", text), ("captions", pa.list_(text)), ("comments", pa.list_(text)),
                      ("markdown", text), ("author", text), ("date", text), ("site_name", text),
                      ("canonical_url", text), ("language", text), ("page_kind", text), ("encoding", text),
                      ("confidence", pa.float64()), ("flags", pa.list_(text)), ("error", text)])


def shard_name(source: str, position: int, shard_size: int) -> str:
    """The shard (file name without suffix) that holds the page at `position` of input `source`."""
    return f"{source}-{position // shard_size:05d}"


class ShardWriter:
    """Rows into shards of the output folder (module docstring); rows of one shard arrive together, in order."""

    def __init__(self, out: Path, fmt: str, shard_size: int = SHARD_SIZE) -> None:
        if fmt not in COLUMNAR:
            raise ValueError(f"columnar format must be one of {', '.join(COLUMNAR)}")
        if shard_size < 1:
            raise ValueError("shard_size must be >= 1")
        if fmt == "parquet":
            require("pyarrow.parquet", "Parquet output")  # before anything is written
        self.out, self.fmt, self.shard_size, self.suffix = out, fmt, shard_size, COLUMNAR[fmt]
        self.current: str | None = None  # the shard being written
        self.rows: list[dict[str, Any]] = []  # its rows not yet handed to the file
        self.count = 0  # its rows so far
        self.written: list[tuple[str, int]] = []  # (shard, rows) finished by this writer
        self._tmp: Path | None = None
        self._fh: Any = None  # the open JSON Lines file or Parquet writer
        self.taken: set[str] = set()  # shard file names the folder's earlier runs wrote (`start`)
        self._placing: tuple[str, int] | None = None  # `place`: the input being placed, its next position

    def start(self, named: Iterable[str] = (), replace: bool = False) -> None:
        """Before the first row, the folder's lock held: remove the temporaries of shards that killed runs left;
        `named`: the shard files the folder's journal names, removed with `replace` (a --no-resume run, whose
        shards take their names again), else names `place` does not take again."""
        for name in os.listdir(self.out):
            if re.fullmatch(rf"\..+{re.escape(self.suffix)}\.\d+\.tmp", name):
                (self.out / name).unlink(missing_ok=True)
        named = {name for name in named if name.endswith(self.suffix) and os.path.basename(name) == name}
        if replace:
            for name in named:
                if (self.out / name).is_file():
                    (self.out / name).unlink()
        else:
            self.taken = named

    def place(self, source: str) -> int:
        """The position of the next row of input `source` in this run: after every shard of that input that the
        folder holds, or its journal names (a shard lost since is not rewritten under its name)."""
        if self._placing is None or self._placing[0] != source:
            pattern = re.compile(rf"{re.escape(source)}-(\d{{5,}}){re.escape(self.suffix)}")
            found = [int(m.group(1)) for name in {*os.listdir(self.out), *self.taken}
                     if (m := pattern.fullmatch(name))]
            self._placing = (source, (max(found) + 1 if found else 0) * self.shard_size)
        position = self._placing[1]
        self._placing = (source, position + 1)
        return position

    def path(self, shard: str) -> Path:
        """A shard's file."""
        return self.out / (shard + self.suffix)

    def is_done(self, source: str, position: int) -> bool:
        """Whether the shard holding this page exists (a shard file is complete: resume skips its pages)."""
        return self.path(shard_name(source, position, self.shard_size)).exists()

    def add(self, source: str, position: int, row: dict[str, Any]) -> str:
        """Append one page's row (COLUMNS); a row of another shard finishes the one before. Returns its shard."""
        shard = shard_name(source, position, self.shard_size)
        if shard != self.current:
            self._finish()
            self._open(shard)
        self.rows.append(row)
        self.count += 1
        if len(self.rows) >= ROW_GROUP:
            self._flush()
        return shard

    def close(self, complete: bool = True) -> None:
        """Finish the shard being written (complete: the run went through its input) or drop it (an interrupted
        run: its pages are redone on resume)."""
        if complete:
            self._finish()
        else:
            self._drop()

    # ------------------------------------------------------------------------------------------ files
    def _open(self, shard: str) -> None:
        self.current, self.rows, self.count = shard, [], 0
        self._tmp = self.out / f".{shard}{self.suffix}.{os.getpid()}.tmp"
        self.out.mkdir(parents=True, exist_ok=True)
        fd = open_new(self._tmp)  # a new file: a link at the temporary's name is removed, never written through
        if self.fmt == "jsonl":
            self._fh = os.fdopen(fd, "w", encoding="utf-8")
        else:
            os.close(fd)
            pq = require("pyarrow.parquet", "Parquet output")
            self._fh = pq.ParquetWriter(self._tmp, schema(), compression="zstd")

    def _flush(self) -> None:
        if not self.rows:
            return
        if self.fmt == "jsonl":
            self._fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows))
        else:
            pa = require("pyarrow", "Parquet output")
            self._fh.write_table(pa.Table.from_pylist(self.rows, schema=schema()))
        self.rows = []

    def _finish(self) -> None:
        """The current shard complete: flushed, closed, fsync'd and renamed into place."""
        if self.current is None or self._tmp is None:
            return
        self._flush()
        self._fh.close()
        with open(self._tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(self._tmp, self.path(self.current))
        self.written.append((self.current, self.count))
        self.current, self._tmp, self._fh = None, None, None

    def _drop(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except (OSError, ValueError):
                pass
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
        self.current, self._tmp, self._fh, self.rows = None, None, None, []


def read_shard(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a shard file (Parquet or JSON Lines), in order."""
    path = Path(path)
    if path.suffix == ".parquet":
        pq = require("pyarrow.parquet", "reading Parquet shards")
        return pq.read_table(path).to_pylist()
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
