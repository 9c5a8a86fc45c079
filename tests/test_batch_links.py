"""Links inside the output folder: nothing a batch run writes goes through one to a file or folder outside it.

The files written in place (the folder's lock, the journal) refuse the run when they are links or have other
names; a page whose folder in DIR is a link fails with the reason; a linked review folder refuses the run; a link
standing at a temporary's name (a page's, report.json's, a shard's) is replaced, never written through."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.batch.columnar import ShardWriter, read_shard
from bodyblocks.cli import main
from bodyblocks.runtime.files import LinkRefused

PRECIOUS = "precious: not the run's to touch\n"


def article(tag: str) -> str:
    return ("<html><head><title>Relief</title></head><body><div class='story'><p>Relief convoys reached the "
            f"valley on Tuesday, dispatch {tag} said, after three days of rain, and the roads reopened.</p><p>"
            "Residents had waited on the ridge for supplies since the bridge collapsed.</p></div></body></html>")


def pages(folder: Path, *keys: str) -> Path:
    for key in keys:
        (folder / f"{key}.html").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{key}.html").write_text(article(key), encoding="utf-8")
    return folder


def run(inputs: list[Path], out: Path, **opts: Any) -> dict:
    run_batch(inputs, out, BatchOptions(extractor="heuristic", progress=False, **opts))
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every --out, with a file a run must never change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "file").write_text(PRECIOUS, encoding="utf-8")
    return folder


def untouched(outside: Path) -> bool:
    return [p.name for p in outside.iterdir()] == ["file"] and (outside / "file").read_text() == PRECIOUS


@pytest.mark.parametrize("name", [".bodyblocks.lock", "report.pages.jsonl"])
@pytest.mark.parametrize("dangling", [False, True])
def test_a_lock_or_journal_that_is_a_link_refuses_the_run(tmp_path: Path, outside: Path, name: str,
                                                          dangling: bool, capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    src, out = pages(tmp_path / "in", "a"), tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(outside / ("new" if dangling else "file"))
    with pytest.raises(LinkRefused, match="symbolic link"):
        run([src], out)
    assert untouched(outside) and not (out / "a.txt").exists()
    assert main(["extract", str(src), "--out", str(out), "--no-progress", "--extractor", "heuristic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out / name) in err[0] and "symbolic link" in err[0]
    assert untouched(outside)


def test_a_journal_with_another_name_refuses_the_run(tmp_path: Path, outside: Path) -> None:
    src, out = pages(tmp_path / "in", "a"), tmp_path / "out"
    out.mkdir()
    os.link(outside / "file", out / "report.pages.jsonl")  # appending to it would append to the file outside
    with pytest.raises(LinkRefused, match="other names"):
        run([src], out)
    assert untouched(outside)


@pytest.mark.parametrize("fmt", ["txt", "md"])
def test_a_page_whose_folder_in_the_output_is_a_link_fails_alone(tmp_path: Path, outside: Path, fmt: str) -> None:
    src, out = pages(tmp_path / "in", "sub/a", "sub/deeper/b", "c"), tmp_path / "out"
    out.mkdir()
    (out / "sub").symlink_to(outside, target_is_directory=True)
    report = run([src], out, fmt=fmt)
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["c"]["status"] == "ok" and (out / f"c.{fmt}").is_file()
    for key in ("sub/a", "sub/deeper/b"):
        assert by_id[key]["status"] == "failed" and by_id[key]["output"] is None
        assert by_id[key]["error"].startswith("write-failed:") and "symbolic link" in by_id[key]["error"]
    assert untouched(outside)


@pytest.mark.parametrize("linked", ["review", "review/pages"])
def test_a_review_folder_that_is_a_link_refuses_the_run(tmp_path: Path, outside: Path, linked: str) -> None:
    src, out = pages(tmp_path / "in", "a", "b"), tmp_path / "out"
    (out / linked).parent.mkdir(parents=True, exist_ok=True)
    (out / linked).symlink_to(outside, target_is_directory=True)
    with pytest.raises(LinkRefused, match="symbolic link"):
        run([src], out, review=1.0)
    assert untouched(outside) and not (out / "a.txt").exists()


def test_a_link_at_a_temporarys_name_is_replaced_not_written_through(tmp_path: Path, outside: Path) -> None:
    src, out = pages(tmp_path / "in", "a"), tmp_path / "out"
    out.mkdir()
    me = f"{os.getpid()}.{threading.get_ident()}"  # the temporaries' names in this process and thread
    for target in ("a.txt", "report.json"):
        (out / f".{target}.{me}.tmp").symlink_to(outside / "file")
    report = run([src], out)
    assert report["totals"]["ok"] == 1 and "dispatch a said" in (out / "a.txt").read_text(encoding="utf-8")
    assert untouched(outside) and not list(out.glob(".*.tmp"))


def test_a_link_at_a_shards_temporary_is_replaced_not_written_through(tmp_path: Path, outside: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    shards = ShardWriter(out, "jsonl", shard_size=10)
    (out / f".in-00000.jsonl.{os.getpid()}.tmp").symlink_to(outside / "file")  # planted after the run's start
    shards.add("in", 0, {"id": "a", "text": "row"})
    shards.close()
    assert [r["id"] for r in read_shard(out / "in-00000.jsonl")] == ["a"] and untouched(outside)
