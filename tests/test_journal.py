"""The output folder's journal: each page's latest line found again, in this run and in a resumed one."""

from __future__ import annotations

import json
from pathlib import Path

from bodyblocks.batch.journal import JOURNAL, Journal

SETTINGS = {"extractor": "heuristic", "format": "txt"}


def _lines(out: Path) -> list[dict]:
    return [json.loads(raw) for raw in (out / JOURNAL).read_bytes().splitlines()]


def test_each_page_s_latest_line_is_found_in_this_run_and_the_next(tmp_path: Path) -> None:
    with Journal(tmp_path, SETTINGS) as journal:
        journal.append({"id": "a", "status": "ok", "title": "Zoë \u4e2d\u6587 \U0001f600"})  # multi-byte UTF-8
        journal.append({"id": "b", "status": "failed", "error": "timeout: took longer than 60 s"})
        journal.append({"id": "a", "status": "ok", "title": "again"})
        assert journal.line("a") == {"id": "a", "status": "ok", "title": "again"}
        assert journal.line("b") == {"id": "b", "status": "failed", "error": "timeout: took longer than 60 s"}
        assert journal.line("c") is None
    with Journal(tmp_path, SETTINGS) as journal:  # resumed: appended after the lines of the run before
        assert journal.line("a") == {"id": "a", "status": "ok", "title": "again"}
        journal.append({"id": "c", "status": "ok", "title": "\u00e9" * 100})
        journal.append({"id": "b", "status": "ok", "title": "redone"})
        assert journal.line("b") == {"id": "b", "status": "ok", "title": "redone"}
        assert journal.line("c") == {"id": "c", "status": "ok", "title": "\u00e9" * 100}
        assert [line["id"] for line in journal.lines()] == ["a", "b", "c"]  # first recorded order, latest lines
        assert [line["title"] for line in journal.lines()] == ["again", "redone", "\u00e9" * 100]
    assert [("run" in rec, rec.get("id")) for rec in _lines(tmp_path)] == [
        (True, None), (False, "a"), (False, "b"), (False, "a"), (True, None), (False, "c"), (False, "b")]


def test_a_half_line_from_a_killed_run_is_passed_over(tmp_path: Path) -> None:
    with Journal(tmp_path, SETTINGS) as journal:
        journal.append({"id": "a", "status": "ok"})
    with open(tmp_path / JOURNAL, "ab") as fh:
        fh.write(b'{"id": "b", "sta')  # killed in the middle of a line
    with Journal(tmp_path, SETTINGS) as journal:
        assert journal.line("a") == {"id": "a", "status": "ok"} and journal.line("b") is None
        journal.append({"id": "b", "status": "ok"})
        assert journal.line("b") == {"id": "b", "status": "ok"}  # after the half line
        assert [line["id"] for line in journal.lines()] == ["a", "b"]


def test_no_resume_starts_the_journal_again(tmp_path: Path) -> None:
    with Journal(tmp_path, SETTINGS) as journal:
        journal.append({"id": "a", "status": "ok"})
    with Journal(tmp_path, SETTINGS, resume=False) as journal:
        assert journal.line("a") is None
        journal.append({"id": "b", "status": "ok"})
        assert journal.line("b") == {"id": "b", "status": "ok"}
    assert [rec.get("id") for rec in _lines(tmp_path)] == [None, "b"]
