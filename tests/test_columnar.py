"""Columnar output: Parquet and JSON Lines shards named from their input, written atomically, replaced (never
duplicated) by a --no-resume rerun; a resumed run writes exactly the pages no shard holds; a failed page is a row
with its error."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("warcio")

from bodyblocks.batch.columnar import COLUMNS, ShardWriter, read_shard, shard_name  # noqa: E402
from bodyblocks.batch.warc import Response, write_warc  # noqa: E402
from bodyblocks.cli import main  # noqa: E402
from bodyblocks.runtime.extras import install_command  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402


def small_warc(path: Path, n: int = 5, broken: bool = True) -> Path:
    """A WARC of `n` synthetic pages and, with `broken`, a record whose gzip member is corrupt at the end."""
    rng = random.Random(7)
    responses = []
    for i in range(n):
        html, _, _ = synth_page(rng, encoding="utf-8")
        responses.append(Response(f"http://example.org/{i}", html))
    write_warc(path, responses)
    if broken:
        with open(path, "ab") as fh:
            fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xde\xad\xbe\xef" * 8)
    return path


def run(*argv: str) -> int:
    return main(["extract", *argv, "--workers", "1", "--no-progress"])


def test_shards_by_position_atomic_and_dropped_when_the_run_stops(tmp_path: Path) -> None:
    shards = ShardWriter(tmp_path, "jsonl", shard_size=2)
    row = dict.fromkeys(COLUMNS)
    for position in range(3):
        shards.add("crawl", position, row | {"id": f"p{position}"})
    assert (tmp_path / "crawl-00000.jsonl").exists()  # full: renamed into place as soon as the next shard began
    assert not (tmp_path / "crawl-00001.jsonl").exists()  # still being written, under a temporary name
    shards.close(complete=False)  # an interrupted run: the partial shard is not left looking complete
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl-00000.jsonl"]
    assert [r["id"] for r in read_shard(tmp_path / "crawl-00000.jsonl")] == ["p0", "p1"]
    assert shards.is_done("crawl", 1) and not shards.is_done("crawl", 2)
    assert shard_name("crawl", 19_999, 10_000) == "crawl-00001"
    with pytest.raises(ValueError, match="shard_size"):
        ShardWriter(tmp_path, "parquet", shard_size=0)


def test_parquet_shards_rerun_and_resume(tmp_path: Path) -> None:
    warc = small_warc(tmp_path / "crawl.warc.gz")
    out = tmp_path / "out"
    assert run(str(warc), "--out", str(out), "--format", "parquet", "--shard-size", "2") == 1  # one broken
    names = sorted(p.name for p in out.glob("*.parquet"))
    assert names == ["crawl-00000.parquet", "crawl-00001.parquet", "crawl-00002.parquet"]
    rows = [r for name in names for r in read_shard(out / name)]
    assert [r["id"] for r in rows] == [f"crawl/{i:07d}" for i in range(6)]
    assert list(rows[0]) == list(COLUMNS)
    assert rows[-1]["error"].startswith("malformed:") and rows[-1]["text"] is None
    assert all(r["text"] and r["markdown"] and r["record_id"] and r["language"] == "zh" for r in rows[:5])
    assert not list(out.glob(".*.tmp"))
    before = {name: (out / name).stat().st_mtime_ns for name in names}

    assert run(str(warc), "--out", str(out), "--format", "parquet", "--shard-size", "2") == 0  # all done already
    assert {name: (out / name).stat().st_mtime_ns for name in names} == before
    (out / "crawl-00001.parquet").unlink()  # a lost shard: only its pages are redone, into a shard of their own
    assert run(str(warc), "--out", str(out), "--format", "parquet", "--shard-size", "2") == 0
    assert read_shard(out / "crawl-00003.parquet") == rows[2:4]
    assert (out / "crawl-00000.parquet").stat().st_mtime_ns == before["crawl-00000.parquet"]
    report = json.loads((out / "report.json").read_text())
    assert report["this_run"]["skipped"] == 4 and report["this_run"]["ok"] == 2
    assert report["totals"]["pages"] == 6  # every page once, whatever the runs

    # --no-resume redoes every shard: the earlier runs' removed, the first names again, never a second copy
    assert run(str(warc), "--out", str(out), "--format", "parquet", "--shard-size", "2", "--no-resume") == 1
    assert sorted(p.name for p in out.glob("*.parquet")) == names
    assert [r for name in names for r in read_shard(out / name)] == rows


def test_jsonl_rows_equal_parquet_rows_and_html_inputs_shard_too(tmp_path: Path) -> None:
    warc = small_warc(tmp_path / "crawl.warc.gz", n=3, broken=False)
    for fmt in ("jsonl", "parquet"):
        assert run(str(warc), "--out", str(tmp_path / fmt), "--format", fmt) == 0
    jsonl, parquet = tmp_path / "jsonl" / "crawl-00000.jsonl", tmp_path / "parquet" / "crawl-00000.parquet"
    assert read_shard(jsonl) == read_shard(parquet)
    pages = tmp_path / "pages"
    pages.mkdir()
    for i in range(3):
        (pages / f"p{i}.html").write_bytes(synth_page(random.Random(i))[0])
    (pages / "empty.html").write_bytes(b"")
    assert run(str(pages), "--out", str(tmp_path / "folder"), "--format", "jsonl") == 1
    rows = read_shard(tmp_path / "folder" / "pages-00000.jsonl")
    assert [r["id"] for r in rows] == ["empty", "p0", "p1", "p2"]
    assert rows[0]["error"].startswith("empty:") and rows[1]["url"] is None and rows[1]["text"]


def test_another_shard_size_is_refused_on_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warc = small_warc(tmp_path / "crawl.warc.gz", n=2, broken=False)
    out = tmp_path / "out"
    assert run(str(warc), "--out", str(out), "--format", "jsonl", "--shard-size", "2") == 0
    assert run(str(warc), "--out", str(out), "--format", "jsonl", "--shard-size", "1") == 2
    assert "shard_size 2" in capsys.readouterr().err


def test_without_the_scale_extra_parquet_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    warc = small_warc(tmp_path / "crawl.warc.gz", n=1, broken=False)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert run(str(warc), "--out", str(tmp_path / "out"), "--format", "parquet") == 2
    err = capsys.readouterr().err.strip()
    assert err == ("bodyblocks extract: Parquet output needs pyarrow, which is not installed "
                   f"({install_command('scale')})")
    monkeypatch.setitem(sys.modules, "warcio", None)
    assert run(str(warc), "--out", str(tmp_path / "out2"), "--format", "txt") == 2
    assert "reading WARC files needs warcio" in capsys.readouterr().err


def test_without_the_scale_packages_the_rest_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    for module in ("pyarrow", "pyarrow.parquet", "warcio", "ray", "ray.data"):
        monkeypatch.setitem(sys.modules, module, None)
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "a.html").write_bytes(synth_page(random.Random(1))[0])
    assert run(str(pages), "--out", str(tmp_path / "txt")) == 0  # files in, a file per page out: no extra needed
    assert run(str(pages), "--out", str(tmp_path / "jsonl"), "--format", "jsonl") == 0  # JSON Lines needs none
    assert read_shard(tmp_path / "jsonl" / "pages-00000.jsonl")[0]["text"]
    capsys.readouterr()
    assert main(["extract", str(pages), "--out", str(tmp_path / "ray"), "--ray", "--format", "jsonl"]) == 2
    assert capsys.readouterr().err.strip() == ("bodyblocks extract: --ray (Ray Data) needs ray, which is not installed "
                                               f"({install_command('scale')})")
