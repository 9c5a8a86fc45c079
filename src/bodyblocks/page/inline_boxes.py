"""Tiny layout boxes inside a sentence flow inline: a one-cell table or an image's <figure> between two pieces of
a sentence ("新增 5<table><tr><td>00</td></tr></table>万元") is part of its line, not lines of its own.

A page sets a number or a word apart in a one-cell table (a style of its own, a border) or an image in a <figure>
in the middle of a sentence; the HTML parser then closes the paragraph at the box (a <p> cannot hold a table),
and the segmenter cut the sentence into "新增 5" / "00" / "万元". parse() (segment.py) rewrites such a box before
the walk, on either parser's tree:

  a box     a <table> of one row of one cell (<tbody>/<thead> aside) holding inline markup only and at most
            INLINE_CHARS characters, or a <figure> holding no text and inline markup only (an image, a link);
  inline    non-blank text right before it (the tail of the element before it, its parent's text, or the end of
            the paragraph the parser closed at it) that does not end a sentence (. ! ? 。 ！ ？), and non-blank
            text right after it (its tail);
  rewrite   the box and its rows and cells become <span>s, and when the parser closed a paragraph at it, the box
            and the inline content after it (up to the next block element) go back into that paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import islice
from typing import Any

from bodyblocks.page.htmltags import BLOCK_TAGS

INLINE_CHARS = 20  # characters of a one-cell table's text, white space excluded
MAX_BOX_NODES = 16  # elements inside a box looked at (more: no tiny box)
_TABLE_PARTS = frozenset(["tbody", "thead", "tfoot", "tr", "td", "th"])
_SENTENCE_END = re.compile(r"[.!?。！？]\s*$")
_SPACE = re.compile(r"\s+")


def _tiny(tag: str, inner: list[str], text: Callable[[], str]) -> bool:
    """Whether a box with these descendant tags (at most MAX_BOX_NODES + 1 of them) and text is tiny (module
    docstring). The text is read only once the tags allow a tiny box: a box's text is all of its subtree, and
    reading it for every table of a page nested 20,000 deep is quadratic."""
    if len(inner) > MAX_BOX_NODES:
        return False
    block = [t for t in inner if t in BLOCK_TAGS or t in _TABLE_PARTS]
    if tag == "figure":
        return not block and not text()
    parts = [t for t in block if t not in ("tbody", "thead", "tfoot")]
    cells = sum(t in ("td", "th") for t in parts)
    return parts.count("tr") <= 1 and cells == 1 and len(parts) == cells + parts.count("tr") \
        and len(text()) <= INLINE_CHARS


def _mid_sentence(before: str | None, after: str | None) -> bool:
    return bool(before and before.strip() and not _SENTENCE_END.search(before) and after and after.strip())


# ----------------------------------------------------------------------------------------- lxml
def inline_boxes_lxml(root: Any) -> None:
    """Rewrite the tiny boxes in a sentence of an lxml tree (module docstring), in place."""
    for box in list(root.iter("table", "figure")):
        inner = [d.tag.lower() for d in islice(box.iterdescendants(), MAX_BOX_NODES + 1) if isinstance(d.tag, str)]
        if not _tiny(box.tag, inner, lambda box=box: _SPACE.sub("", box.xpath("string()"))):
            continue
        prev, parent = box.getprevious(), box.getparent()
        if prev is None:
            before, closed = (parent.text if parent is not None else None), False
        elif prev.tail and prev.tail.strip():
            before, closed = prev.tail, False
        else:  # the end of the element before it: a paragraph the parser closed here, or inline markup
            inline = isinstance(prev.tag, str) and prev.tag.lower() not in BLOCK_TAGS
            closed = prev.tag == "p"
            before = prev.xpath("string()") if closed or inline else None
        if parent is None or not _mid_sentence(before, box.tail):
            continue
        for el in [box, *box.iterdescendants(*_TABLE_PARTS)]:
            el.tag = "span"
        if closed:  # back into the paragraph the parser closed at it, with what follows up to a block
            moved = [box]
            nxt = box.getnext()
            while nxt is not None and not (isinstance(nxt.tag, str) and nxt.tag.lower() in BLOCK_TAGS):
                moved.append(nxt)
                nxt = nxt.getnext()
            for el in moved:
                prev.append(el)  # with its tail


# ----------------------------------------------------------------------------------------- BeautifulSoup
def _bs4_tags_below(box: Any, tag_type: type) -> list[str]:
    """The tag names below a box in document order, at most MAX_BOX_NODES + 1 (bs4's `descendants` first finds
    the subtree's last node: a walk of all of it, for every box)."""
    names: list[str] = []
    stack = list(reversed(box.contents))
    while stack and len(names) <= MAX_BOX_NODES:
        node = stack.pop()
        if isinstance(node, tag_type):
            names.append(node.name.lower())
            stack.extend(reversed(node.contents))
    return names


def inline_boxes_bs4(soup: Any) -> None:
    """inline_boxes_lxml on a BeautifulSoup tree (the same libxml2 tree)."""
    from bs4 import Comment, NavigableString, Tag

    for box in soup.find_all(["table", "figure"]):
        inner = _bs4_tags_below(box, Tag)
        if not _tiny(box.name, inner, lambda box=box: _SPACE.sub("", box.get_text())):
            continue
        after = box.next_sibling
        tail = str(after) if isinstance(after, NavigableString) and not isinstance(after, Comment) else None
        prev = box.previous_sibling  # white space between it and the element before it passed over, as lxml's tail
        while isinstance(prev, NavigableString) and not isinstance(prev, Comment) and not prev.strip():
            prev = prev.previous_sibling
        closed = isinstance(prev, Tag) and prev.name.lower() == "p"
        if isinstance(prev, Tag):
            before: str | None = prev.get_text() if closed or prev.name.lower() not in BLOCK_TAGS else None
        elif isinstance(prev, NavigableString) and not isinstance(prev, Comment):
            before = str(prev)
        else:
            before = None
        if box.parent is None or not _mid_sentence(before, tail):
            continue
        for el in [box, *box.find_all(list(_TABLE_PARTS))]:
            el.name = "span"
        if closed:
            moved = [box]
            nxt = box.next_sibling
            while nxt is not None and not (isinstance(nxt, Tag) and nxt.name.lower() in BLOCK_TAGS):
                moved.append(nxt)
                nxt = nxt.next_sibling
            for node in moved:
                prev.append(node.extract())
