"""The depth-first walk of a parsed page: elements in, ordered text blocks with tag paths and features out.

    blocks = walk_blocks(tree, "lxml")          # tree: segment.parse's lxml root or BeautifulSoup tree

The walk is iterative (10,000-deep pages must not overflow the stack) and skips invisible subtrees
(htmltags.INVISIBLE_TAGS, comments, hidden elements; `aria-hidden` is only hidden from screen readers, a
browser displays it; React's streamed `<div hidden id="S:0">` segments are displayed once their inline script
moves them into place). Text accumulates until a block-level tag opens or closes, then becomes a Block with
its tag path, xpath and DOM features; <br> is a newline inside the block. Both parsers' walks drive one
_Builder with the same calls (start and end of a block-level or flag-setting element, inline_start and
inline_end of any other, text, br), in the same order, so they cannot drift apart in logic;
tests/test_segment.py checks that they give the same blocks on real pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from bodyblocks.page.builder import _NOT_INLINE, CELL_TAGS, _Builder
from bodyblocks.page.htmltags import BLOCK_TAGS, INVISIBLE_TAGS
from bodyblocks.types import Block

_REACT_SEGMENT = re.compile(r"S:\d+")  # <div hidden id="S:0">: streamed content that a script reveals
# A <button> holding this many elements, or any element of a page's flow (a paragraph, a heading, a list, a
# table, a section), is not a label: a missing </button> swallowed part of the page (a browser displays a
# button's content, so nothing is lost by walking it).
SWALLOWING_BUTTON = 64
_PAGE_FLOW = frozenset(["p", "h1", "h2", "h3", "h4", "h5", "h6", "article", "section", "main", "table", "ul", "ol"])
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
MAX_CELL_SCAN = 64  # a table cell is looked into this far to decide whether it is a one-line data cell




def _boundary(tag: str, descendant_tags: Iterator[str]) -> bool:
    """Whether an element starts a new block.

    Block-level tags do, except a table cell that holds only inline markup: the cells of a data-table row
    are one line of text in a browser (and in every gold set), so they join into the row's block.
    """
    if tag not in BLOCK_TAGS:
        return False
    if tag not in CELL_TAGS:
        return True
    for i, t in enumerate(descendant_tags):
        if i >= MAX_CELL_SCAN or t in BLOCK_TAGS or t == "br":
            return True
    return False


def _at_least(items: Iterator[Any], n: int) -> bool:
    """Whether an iterator yields n items (reading no more than that)."""
    return sum(1 for _ in zip(range(n), items, strict=False)) >= n


def _swallowed(descendants: Iterator[str]) -> bool:
    """Whether a <button>'s descendant tags show a swallowed page part rather than a label."""
    for i, t in enumerate(descendants):
        if i + 1 >= SWALLOWING_BUTTON or t in _PAGE_FLOW:
            return True
    return False


def _skip(tag: str, attrs: Any, noscript: bool = False, descendants: Iterator[str] | None = None) -> bool:
    """Whether an element's whole subtree is invisible (`noscript`: a browser without JavaScript).

    `attrs` is anything with the `get` of a dict (BeautifulSoup's attrs, an lxml element).
    `descendants` (tag names) is read only for a <button>, to tell a label from a swallowed page part.
    """
    if tag in INVISIBLE_TAGS:
        if tag == "button":
            return descendants is None or not _swallowed(descendants)
        return not (noscript and tag == "noscript")
    if attrs.get("hidden") is not None and not (tag == "div" and _REACT_SEGMENT.fullmatch(str(attrs.get("id", "")))):
        return True
    style = attrs.get("style")
    return bool(style) and _HIDDEN_STYLE.search(str(style)) is not None


# ----------------------------------------------------------------------------------------- tree walks
# Both walks drive one _Builder with the same calls (start/end for a tag in _NOT_INLINE, inline_start/inline_end
# for any other, text, br), in the same order, so the two parsers cannot drift apart in logic;
# tests/test_segment.py checks that they give the same blocks.
def _bs4_p_children(node: Any) -> int:
    from bs4 import Tag

    return sum(1 for c in node.contents if isinstance(c, Tag) and c.name == "p")


def _bs4_tags_below(node: Any) -> Iterator[str]:
    """Tag names of a node's descendant elements, in document order, read lazily: callers stop early.

    Not bs4's `descendants`, which first walks down to the node's last descendant: once per table cell of
    20,000 nested tables, that made the walk quadratic (69 s for a 660 KB page).
    """
    from bs4 import Tag

    stack = [c for c in reversed(node.contents) if isinstance(c, Tag)]
    while stack:
        d = stack.pop()
        yield d.name
        stack.extend(c for c in reversed(d.contents) if isinstance(c, Tag))


def _walk_bs4(root: Any, b: _Builder, noscript: bool = False) -> None:
    """Walk a BeautifulSoup tree (iterative DFS)."""
    from bs4 import NavigableString, Tag
    from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

    invisible = (Comment, Declaration, Doctype, ProcessingInstruction)
    stack: list[tuple[Any, bool]] = [(c, True) for c in reversed(root.contents)]  # below [document]
    while stack:
        node, entering = stack.pop()
        if isinstance(node, Tag):
            name = (node.name or "").lower()
            if not entering:
                if name in _NOT_INLINE:
                    b.end()
                else:
                    b.inline_end()
                continue
            inner = _bs4_tags_below(node) if name == "button" else None
            if _skip(name, node.attrs, noscript, inner):
                continue
            if name == "br":
                b.br()
                continue
            if name not in _NOT_INLINE:
                b.inline_start(name, node.attrs, node)
            else:
                inner = _bs4_tags_below(node) if name in CELL_TAGS else iter(())
                b.start(name, node.attrs, node, _boundary(name, inner))
            stack.append((node, False))
            stack.extend((c, True) for c in reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, invisible):
            if type(node) is NavigableString or node.__class__.__name__ in ("CData", "RubyTextString"):
                b.text(str(node))


def _lxml_p_children(el: Any) -> int:
    return len(list(el.iterchildren("p")))  # el.findall("p"), without ElementPath


def _lxml_tags_below(el: Any) -> Iterator[str]:
    """Tag names of an element's descendants, in document order (read lazily: callers stop early)."""
    return (d.tag for d in el.iterdescendants() if isinstance(d.tag, str))


# Tags whose start or end does more than push or pop the walk's stack (and count links and marks): block
# boundaries, table cells (a tab), flags and counters (preformatted text, headings, list items, rows), list
# markers, line breaks. The walks open and close these with _Builder.start and end, every other element (inline:
# <a>, <b>, <span>, ...) with _Builder.inline_start and inline_end.


def _walk_lxml(root: Any, b: _Builder, noscript: bool = False) -> None:
    """Walk an lxml.html tree with lxml's own iterator (text and tail handled as BeautifulSoup would).

    An element is its own attribute mapping here (`el.get`): no attribute proxy is built per element. The
    builder's methods are bound once, outside the loop.
    """
    from lxml import etree

    walk = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    skip_subtree = walk.skip_subtree
    skipped = None  # an element whose subtree was skipped: its end event only gives its tail
    text, start, end, inline_start, inline_end = b.text, b.start, b.end, b.inline_start, b.inline_end
    stack = b.stack
    for event, el in walk:
        if event == "start":
            tag = el.tag
            if tag.__class__ is not str:  # an entity or other non-element node: only its tail is visible
                skip_subtree()
                skipped = el
                continue
            name = tag.lower()
            # only these can be invisible (_skip: an invisible tag, or a `hidden` or `style` attribute)
            if name in INVISIBLE_TAGS or el.get("hidden") is not None or el.get("style"):
                if _skip(name, el, noscript, _lxml_tags_below(el) if name == "button" else None):
                    skip_subtree()
                    skipped = el
                    continue
            if name not in _NOT_INLINE:
                inline_start(name, el, el)
            elif name == "br":
                b.br()
                skip_subtree()
                skipped = el
                continue
            elif name in CELL_TAGS:
                start(name, el, el, _boundary(name, _lxml_tags_below(el)))
            else:
                start(name, el, el, name in BLOCK_TAGS)
            t = el.text
            if t:
                text(t)
        else:
            if event == "end":
                if el is skipped:
                    skipped = None
                elif stack[-1].tag in _NOT_INLINE:
                    end()
                else:
                    inline_end()
            t = el.tail  # of an element, or of a comment or processing instruction (its own text is not shown)
            if t:
                text(t)


def walk_blocks(tree: Any, parser: str, noscript: bool = False, owners: list[Any] | None = None,
                marks: bool = False) -> list[Block]:
    """The blocks of a parsed tree (`noscript`: as a browser without JavaScript displays it). `owners`: a list
    that gets each block's owning element (the element its tag path and xpath name), in block order. `marks`:
    each block notes its links and emphasis (Block.marks), which Markdown output writes."""
    if parser == "bs4":
        builder = _Builder(_bs4_p_children, owners, marks)
        _walk_bs4(tree, builder, noscript)
    else:
        builder = _Builder(_lxml_p_children, owners, marks)
        _walk_lxml(tree, builder, noscript)
    return builder.finish()
