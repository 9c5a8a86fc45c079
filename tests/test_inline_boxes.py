"""A tiny layout box inside a sentence (a one-cell table, an image's <figure>) flows inline: the sentence stays one
line, on both parsers; a real table, or a box between sentences, still breaks the line."""

from __future__ import annotations

import pytest

from bodyblocks.page.segment import segment


def _lines(body: str, parser: str) -> list[str]:
    return [b.text for b in segment(f"<html><body>{body}</body></html>", parser=parser).blocks]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_a_one_cell_table_inside_a_sentence_is_part_of_its_line(parser: str) -> None:
    assert _lines("<p>新增5<table><tr><td>00</td></tr></table>万元，同比增长三成。</p><p>下一段。</p>", parser) == [
        "新增500万元，同比增长三成。", "下一段。"]
    assert _lines("<div>The price rose to 5<table><tbody><tr><td><b>00</b></td></tr></tbody></table> dollars a unit "
                  "<i>after</i> the works.<p>Next.</p></div>", parser) == [
        "The price rose to 500 dollars a unit after the works.", "Next."]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_an_image_inside_a_sentence_does_not_break_its_line(parser: str) -> None:
    assert _lines("<p>新增 5<img src='x.png'>00万元</p>", parser) == ["新增 500万元"]
    assert _lines("<p>新增5<figure><a href='/i'><img src='x.png'></a></figure>00万元，同比增长。</p>", parser) == [
        "新增500万元，同比增长。"]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_real_tables_and_boxes_between_sentences_still_break_the_line(parser: str) -> None:
    table = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
    assert _lines(f"<div>Before it{table}after it.</div>", parser) == ["Before it", "a\tb", "c\td", "after it."]
    assert _lines("<p>One sentence.</p><table><tr><td>Note</td></tr></table><p>Another.</p>", parser) == [
        "One sentence.", "Note", "Another."]
    long_cell = "<table><tr><td>a cell with more words than a number or a word set apart</td></tr></table>"
    assert len(_lines(f"<p>Text before{long_cell}text after.</p>", parser)) == 3
    captioned = "<figure><img src='x.png'><figcaption>A caption</figcaption></figure>"
    assert _lines(f"<p>Text before{captioned}text after.</p>", parser) == ["Text before", "A caption", "text after."]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_nested_tables_are_looked_into_a_bounded_depth_only(parser: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A box's text is read only for a box whose tags allow a tiny one, and its tags are read MAX_BOX_NODES deep:
    on 20,000 nested tables, reading every table's whole subtree took minutes (the hostile corpus's page)."""
    from bodyblocks.page import inline_boxes
    from bodyblocks.page.segment import parse

    reads: list[int] = []
    real = inline_boxes._SPACE

    class Counting:
        def sub(self, repl: str, text: str) -> str:
            reads.append(len(text))
            return real.sub(repl, text)

    monkeypatch.setattr(inline_boxes, "_SPACE", Counting())
    depth = 300
    html = "<html><body>" + "<table><tr><td>" * depth + "deep" + "</td></tr></table>" * depth + "</body></html>"
    parse(html, parser=parser)
    assert len(reads) <= 2  # the innermost table alone (its row and cell: a one-cell box)
