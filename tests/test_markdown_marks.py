"""Markdown keeps a block's links and emphasis: the segmenter notes them (Block.marks) in both walks,
and markdown.to_markdown writes them, safely."""

from __future__ import annotations

import pytest

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.page.markdown import to_markdown
from bodyblocks.page.segment import segment

PAGE = ("<html><body><div class='story'>"
        "<p>Read <a href='/reports/full'>the <b>full</b> report</a> and <em>this</em> note.</p>"
        "<p>Tags: <a href='/t/breakfast'>breakfast</a><a href='/t/canning'>canning</a>"
        "<a href='/t/easy'>easy recipes</a></p>"
        "<p>Do not <a href='javascript:alert(document.domain)'>click</a> or <a href='#top'>jump</a> here.</p>"
        "<ul><li><a href='/a b(c)'>item [1]</a> in a list</li></ul>"
        "<p>* a line that starts with a star and <strong>bold</strong> words</p>"
        "<pre><a href='/code'>code</a> stays as it is</pre>"
        "<a href='/x'><div>a block inside a link</div></a>"
        "</div></body></html>")


@pytest.fixture(params=["bs4", "lxml"])
def md(request: pytest.FixtureRequest) -> str:
    return to_markdown("Story", segment(PAGE, parser=request.param, marks=True).blocks, "https://news.example/2026/story.html")


def test_links_and_emphasis_are_kept_with_absolute_addresses(md: str) -> None:
    assert "Read [the full report](https://news.example/reports/full) and *this* note." in md


def test_links_that_touch_get_a_space_between_them(md: str) -> None:
    assert ("Tags: [breakfast](https://news.example/t/breakfast) [canning](https://news.example/t/canning) "
            "[easy recipes](https://news.example/t/easy)") in md


def test_script_addresses_and_in_page_anchors_stay_plain_text(md: str) -> None:
    assert "Do not click or jump here." in md and "javascript" not in md


def test_link_text_and_addresses_are_escaped(md: str) -> None:
    assert "- [item \\[1\\]](https://news.example/a%20b%28c%29) in a list" in md


def test_a_line_markdown_would_read_as_markup_is_still_escaped(md: str) -> None:
    assert "\\* a line that starts with a star and **bold** words" in md


def test_preformatted_text_and_blocks_inside_a_link_keep_no_marks(md: str) -> None:
    assert "```\ncode stays as it is\n```" in md and "\na block inside a link" in md


def test_both_walks_note_the_same_marks() -> None:
    bs4, lxml = segment(PAGE, parser="bs4", marks=True).blocks, segment(PAGE, parser="lxml", marks=True).blocks
    assert [b.marks for b in bs4] == [b.marks for b in lxml]
    assert bs4[0].marks == (("link", "the full report", "/reports/full"), ("strong", "full", None),
                            ("em", "this", None))


def test_a_page_without_a_url_keeps_relative_addresses() -> None:
    md = to_markdown("", segment("<p>See <a href='/about'>about us</a>.</p>", marks=True).blocks)
    assert "See [about us](/about)." in md


def test_marks_are_noted_only_when_asked_for_and_the_text_is_the_same() -> None:
    plain, marked = segment(PAGE).blocks, segment(PAGE, marks=True).blocks
    assert all(b.marks == () for b in plain) and any(b.marks for b in marked)
    assert [b.text for b in plain] == [b.text for b in marked]


@pytest.mark.parametrize("fmt", ["md", "txt"])
def test_a_markdown_run_keeps_the_links_of_the_kept_text(tmp_path, fmt: str) -> None:  # noqa: ANN001
    page = tmp_path / "in" / "story.html"
    page.parent.mkdir()
    page.write_text("<html><head><title>Quay</title><link rel='canonical' href='https://port.example/quay'></head>"
                    "<body><article><h1>Quay works begin</h1><p>The council published "
                    "<a href='/figures.pdf'>the figures</a> for the quay works on Monday, and the "
                    "<strong>first piles</strong> go in next week, officials said in a statement.</p>"
                    "<p>Residents asked for the works after the storm damaged the old wall in the spring, "
                    "and the port agreed to pay for half of them.</p></article></body></html>", encoding="utf-8")
    run_batch([page.parent], tmp_path / "out", BatchOptions(extractor="ensemble", fmt=fmt, progress=False))
    out = (tmp_path / "out" / f"story.{fmt}").read_text(encoding="utf-8")
    if fmt == "md":
        assert "[the figures](https://port.example/figures.pdf)" in out and "**first piles**" in out
    else:
        assert "published the figures for the quay" in out and "](" not in out
