"""The DOM-fidelity benchmark's helpers (benchmarks/dom_fidelity.py, its parts in benchmarks/dom/): line scoring,
the prologue check, the page selection and what Chromium is given. No browser is started here."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.dom.causes import _Locator, line_cause, part_of
from benchmarks.dom.lines import _allocate, line_score, prologue_markup, rendered_lines, select_pages, squash
from benchmarks.dom.render import render_file_text
from lxml import etree


def test_rendered_lines_skip_punctuation_only_and_collapse_space() -> None:
    text = "  Hello \t world \n\n | \n•\n 新闻\u00a0中心 \n\u200b\n42"
    assert rendered_lines(text) == ["Hello world", "新闻 中心", "42"]


def test_squash_is_case_and_space_free() -> None:
    assert squash("Hello  W\u00adorld\u200b \u3000X") == "helloworldx"


def test_line_score_set_then_substring() -> None:
    blocks = ["First paragraph here.", "Cell one\nCell two", "Split across", "two blocks"]
    lines = ["First paragraph here.", "CELL ONE", "Split across two blocks", "Not ours at all", "cell two"]
    s = line_score(lines, blocks)
    assert (s["lines"], s["found"]) == (5, 4)
    assert s["missing"] == ["Not ours at all"]
    assert s["line_share"] == 0.8
    assert 0 < s["char_share"] < 1
    assert line_score([], blocks)["line_share"] is None


def test_prologue_markup() -> None:
    assert prologue_markup("<!DOCTYPE html>\n<!-- c --><html><body>x") is None
    assert prologue_markup("<?xml version='1.0'?><html>") is None
    assert prologue_markup("<script>var a</script>\n<html><body>x") == "<script>"
    assert prologue_markup("stray text <html>") == "text"
    assert prologue_markup("<p>no html tag") is None


def test_allocate_fills_small_datasets_first() -> None:
    share = _allocate({"a": 10, "b": 1000, "c": 1000}, 500)
    assert share == {"a": 10, "b": 245, "c": 245}
    assert sum(_allocate({"a": 3, "b": 4}, 100).values()) == 7


def test_select_pages_keeps_every_chinese_page(tmp_path: Path) -> None:
    ds = tmp_path / "d1"
    ds.mkdir()
    recs = [{"id": f"p{i}", "lang": "zh" if i % 10 == 0 else "en", "html": f"html/p{i}.html.gz"} for i in range(100)]
    (ds / "pages.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    chosen = select_pages(tmp_path, None, 20)
    assert sum(r["lang"] == "zh" for r in chosen) == 10
    assert sum(r["lang"] == "en" for r in chosen) == 20
    assert len(select_pages(tmp_path, 7, 20)) == 7


def test_render_file_text_bom_and_no_refresh() -> None:
    data = render_file_text('<meta http-equiv="Refresh" content="0;url=x">中')
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"x-refresh" in data and "中".encode() in data


def test_line_cause_from_trees() -> None:
    html5 = etree.fromstring("<html><body><noscript><p>Enable JS please</p></noscript><p>Main text here</p>"
                             "<select><option>Option line</option></select></body></html>")
    ours = etree.fromstring("<html><head><noscript><p>Enable JS please</p></noscript></head>"
                            "<body><script>Main text here</script><select><option>Option line</option></select>"
                            "</body></html>")
    h, o = _Locator(html5), _Locator(ours)
    assert line_cause(squash("Enable JS please"), h, o).startswith("inside <noscript>")
    assert line_cause(squash("Main text here"), h, o) == "libxml2 put it inside <script>"
    assert line_cause(squash("Option line"), h, o).startswith("<select> options")
    assert line_cause(squash("Nowhere"), h, o) == "not in the HTML5 tree's text"


def test_part_of_exact_then_contained() -> None:
    parts = {"select": {"october2012", "all"}, "button": {"togglesub-navigation"}, "noscript": {"october2012"}}
    assert part_of("october2012", parts) == "noscript"  # noscript comes first
    assert part_of("aboutustogglesub-navigation", parts) == "button"
    assert part_of("allrightsreserved", parts) is None  # "all" is too short to count inside a line
    assert part_of("aboutustogglesub-navigation", parts, exact_only=True) is None
