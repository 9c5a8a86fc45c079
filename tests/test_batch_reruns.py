"""Runs into a folder that holds earlier runs: a resumed run writes exactly the pages not yet written (new ones
added to an input too, in every format), pages of another input under the same name keep their outputs, the
folder's own outputs and review pages are never read back as inputs, and what a killed run left is cleaned up."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.batch.columnar import read_shard
from bodyblocks.cli import main


def article(tag: str) -> str:
    return ("<html><head><title>Relief</title></head><body><div class='nav'><a href='/'>Home</a></div>"
            f"<div class='story'><p>Relief convoys reached the valley on Tuesday, dispatch {tag} said, after three "
            "days of rain, and the roads reopened.</p><p>Residents had waited on the ridge for supplies since the "
            "bridge collapsed, and the first trucks carried water and medicine.</p></div></body></html>")


def pages(folder: Path, *tags: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        (folder / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    return folder


def run(inputs: list[Path], out: Path, **opts: Any) -> dict:
    run_batch(inputs, out, BatchOptions(extractor="heuristic", progress=False, **opts))
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def rows(out: Path, fmt: str) -> list[dict[str, Any]]:
    return [row for shard in sorted(out.glob(f"*-[0-9]*.{fmt}")) for row in read_shard(shard)]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_resumed_columnar_run_writes_exactly_the_pages_added_since(tmp_path: Path, fmt: str) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    src, out = pages(tmp_path / "in", "a", "b", "c", "d", "e"), tmp_path / "out"
    assert run([src], out, fmt=fmt)["this_run"]["ok"] == 5
    pages(src, "f", "g", "h")  # added to the folder, "f" to "h" sort after the others; "0" sorts first
    pages(src, "0")
    report = run([src], out, fmt=fmt)
    assert (report["this_run"]["ok"], report["this_run"]["skipped"]) == (4, 5)
    written = [r["id"] for r in rows(out, fmt)]
    assert sorted(written) == ["0", "a", "b", "c", "d", "e", "f", "g", "h"]  # each page once, in some shard
    by_id = {p["id"]: p for p in report["pages"]}
    assert all(by_id[k]["status"] == "ok" and (out / Path(by_id[k]["output"]).name).is_file() for k in by_id)
    assert report["totals"]["pages"] == 9 and report["totals"]["ok"] == 9
    again = run([src], out, fmt=fmt)
    assert (again["this_run"]["ok"], again["this_run"]["skipped"]) == (0, 9)
    redone = run([src], out, fmt=fmt, resume=False)  # the earlier runs' shards replaced, none left beside
    assert redone["this_run"]["ok"] == 9 and sorted(r["id"] for r in rows(out, fmt)) == sorted(written)


@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
def test_the_same_name_from_two_folders_keeps_both_outputs(tmp_path: Path, fmt: str) -> None:
    day1, day2, out = tmp_path / "day1", tmp_path / "day2", tmp_path / "out"
    for day in (day1, day2):
        pages(day, "index")
    run([day1], out, fmt=fmt)
    report = run([day2], out, fmt=fmt)
    by_id = {p["id"]: p for p in report["pages"]}
    assert set(by_id) == {"index", "index~2"} and report["totals"]["ok"] == 2
    assert by_id["index"]["input"].endswith("day1/index.html") and by_id["index~2"]["input"].endswith(
        "day2/index.html")
    if fmt == "txt":
        assert "dispatch index said" in (out / "index.txt").read_text() and (out / "index~2.txt").is_file()
    else:
        assert sorted(r["id"] for r in rows(out, fmt)) == ["index", "index~2"]
    for day in (day1, day2):  # each rerun finds its page done
        assert run([day], out, fmt=fmt)["this_run"]["skipped"] == 1


@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
def test_out_in_with_review_pages_never_reads_them_back(tmp_path: Path, fmt: str) -> None:
    src = pages(tmp_path / "in", "a", "b")
    counts = [run([src], src, fmt=fmt, review=1.0)["totals"]["pages"] for _ in range(3)]
    assert counts == [2, 2, 2]
    assert (src / "review" / "pages" / "a.html").is_file()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_on_the_command_line_fails_as_no_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    report = run([fifo, tmp_path / "gone.html"], tmp_path / "out")
    assert [p["error"] for p in report["pages"]] == ["not-a-file: a FIFO, not a page file",
                                                     "not-found: no such file or folder"]


def test_a_killed_runs_shard_temporary_is_removed_when_the_run_is_resumed(tmp_path: Path) -> None:
    src, out = pages(tmp_path / "in", "a"), tmp_path / "out"
    run([src], out, fmt="jsonl")
    stale = out / ".in-00001.jsonl.99999999.tmp"  # as a run killed with -9 leaves it
    stale.write_text('{"id": "half', encoding="utf-8")
    other = out / "notes.tmp"  # no shard's temporary: left alone
    other.write_text("mine", encoding="utf-8")
    run([src], out, fmt="jsonl")
    assert not stale.exists() and other.exists()


def test_a_review_index_that_cannot_be_written_names_its_file(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    src, out = pages(tmp_path / "in", "a"), tmp_path / "out"
    (out / "review" / "index.html").mkdir(parents=True)  # a folder where the index goes: no write can make it
    code = main(["extract", str(src), "--out", str(out), "--extractor", "heuristic", "--review", "1",
                 "--workers", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot write {out / 'review' / 'index.html'}: Is a directory" in err
    assert "report.json" not in err.splitlines()[-1] and "free space" not in err
    assert json.loads((out / "report.json").read_text())["totals"]["ok"] == 1
