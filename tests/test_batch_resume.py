"""Resumed runs: a page file changed since its output was made is extracted again (its size and modification
time are in its report line); a columnar run stopped by SIGTERM or SIGINT lists only the pages whose shard
exists, and its resumed run does the others; the exit status of each signal is the one docs/CLI.md gives."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.batch.columnar import read_shard
from bodyblocks.batch.input_identity import digest
from bodyblocks.batch.runner import Interrupted
from bodyblocks.runtime.files import REPO_ROOT
from bodyblocks.types import Extraction


def article(tag: str) -> str:
    return ("<html><head><title>Relief</title></head><body><div class='story'><p>Relief convoys reached the "
            f"valley on Tuesday, dispatch {tag} said, after three days of rain, and the roads reopened.</p><p>"
            "Residents had waited on the ridge for supplies since the bridge collapsed.</p></div></body></html>")


def pages(folder: Path, *tags: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        (folder / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    return folder


def run(inputs: list[Path], out: Path, extractor: Any = None, **opts: Any) -> dict:
    run_batch(inputs, out, BatchOptions(extractor="heuristic", progress=False, **opts), extractor=extractor)
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def texts(out: Path, fmt: str) -> dict[str, list[str]]:
    """Every output's text by page id (a columnar format: each row's, in shard order)."""
    if fmt == "txt":
        return {p.stem: [p.read_text(encoding="utf-8")] for p in sorted(out.glob("*.txt"))}
    found: dict[str, list[str]] = {}
    for shard in sorted(out.glob(f"*-[0-9]*.{fmt}")):
        for row in read_shard(shard):
            found.setdefault(row["id"], []).append(row["text"])
    return found


@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
@pytest.mark.parametrize("edit", ["longer", "same size, later mtime"])
def test_a_page_file_changed_since_is_extracted_again(tmp_path: Path, fmt: str, edit: str) -> None:
    src, out = pages(tmp_path / "in", "a", "b"), tmp_path / "out"
    first = run([src], out, fmt=fmt)
    stat = os.stat(src / "a.html")
    new = article("z" if edit.startswith("same") else "zulu-longer")  # edited in place, the file's inode kept
    with open(src / "a.html", "r+", encoding="utf-8") as fh:
        fh.write(new)
        fh.truncate()
    os.utime(src / "a.html", ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    report = run([src], out, fmt=fmt)
    assert (report["this_run"]["ok"], report["this_run"]["skipped"]) == (1, 1)
    written = texts(out, fmt)["a"]
    assert "dispatch a said" not in written[-1] and ("dispatch z" in written[-1])
    line, latest = ({p["id"]: p for p in r["pages"]}["a"] for r in (first, report))  # what each run recorded
    assert (line["input_size"], line["input_mtime_ns"]) == (stat.st_size, stat.st_mtime_ns)
    assert (latest["input_size"], latest["input_mtime_ns"]) == (len(new), stat.st_mtime_ns + 2_000_000_000)
    assert latest["input_sha256"] == digest(new.encode("utf-8")) != line["input_sha256"]
    if fmt == "jsonl":  # the report's line names the shard with the page's new row
        assert [r["text"] for r in read_shard(out / Path(latest["output"]).name)] == [written[-1]]
    again = run([src], out, fmt=fmt)
    assert (again["this_run"]["ok"], again["this_run"]["skipped"]) == (0, 2)


@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
def test_a_page_file_touched_or_copied_again_with_the_same_bytes_is_not(tmp_path: Path, fmt: str) -> None:
    src, out = pages(tmp_path / "in", "a", "b"), tmp_path / "out"
    run([src], out, fmt=fmt)
    pages(src, "a")  # written again, the same bytes: a new modification time
    stat = os.stat(src / "a.html")
    os.utime(src / "a.html", ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    report = run([src], out, fmt=fmt)
    assert (report["this_run"]["ok"], report["this_run"]["skipped"]) == (0, 2)


class StopsAt:
    """An extractor that sends its own process `signum` at its `at`-th page (a user's kill, or Ctrl-C)."""

    name = "heuristic"

    def __init__(self, at: int, signum: int) -> None:
        self.at, self.signum, self.seen = at, signum, 0

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        self.seen += 1
        if self.seen == self.at:
            os.kill(os.getpid(), self.signum)
        return Extraction(text=f"body of page {self.seen}", extractor="heuristic")


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raising KeyboardInterrupt, as in a terminal's process: a job started in the background by a
    non-interactive shell (CI's, nohup's) inherits it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_columnar_run_stopped_by_a_signal_lists_only_pages_whose_shard_exists(
        tmp_path: Path, fmt: str, signum: int, sigint_raises: None) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    src, out = pages(tmp_path / "in", *(f"p{i:02d}" for i in range(12))), tmp_path / "out"
    with pytest.raises(Interrupted if signum == signal.SIGTERM else KeyboardInterrupt):
        run([src], out, StopsAt(8, signum), fmt=fmt, workers=1, shard_size=5)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["status"] == "interrupted"
    listed = [p for p in report["pages"] if p["status"] == "ok"]
    assert all((out / Path(p["output"]).name).is_file() for p in listed)  # none in a shard that is not there
    in_shards = texts(out, fmt)
    assert sorted(p["id"] for p in listed) == sorted(in_shards) and len(in_shards) == 5  # the first shard only
    assert report["totals"]["ok"] == report["this_run"]["ok"] == report["totals"]["pages"] == 5
    resumed = run([src], out, fmt=fmt, shard_size=5)
    assert (resumed["this_run"]["ok"], resumed["this_run"]["skipped"]) == (7, 5)
    assert sorted(texts(out, fmt)) == [f"p{i:02d}" for i in range(12)]
    assert all(len(rows) == 1 for rows in texts(out, fmt).values())  # every page in one shard, once


def test_the_exit_status_of_each_signal_is_the_documented_one() -> None:
    """SIGTERM exits 143 and SIGINT 130 (cli/run.py: 128 + the signal); docs/CLI.md says so."""
    doc = (REPO_ROOT / "docs" / "CLI.md").read_text(encoding="utf-8")
    said = re.search(r"Ctrl-C[^.]*?SIGTERM[^.]*", doc)
    assert said is not None
    assert "130" in said.group(0) and "143" in said.group(0), said.group(0)
    assert 128 + signal.SIGTERM == 143 and 128 + signal.SIGINT == 130
