"""A headline where the page names none: the short, prominent block just above the body, on a page with no
title channel (no og:title, <title> or <h1>: an old table layout whose headline is a bold cell).

    add_prominent(doc, tree)            # at segmentation, on such a page: the blocks that look like a headline
    head = shown_headline(blocks, keep, doc.extra.get(PROMINENT, ()))   # in the decision rule (decision.py)

A block is prominent when it has at most TITLE_CHARS characters, two words or more (four CJK characters), no link
text, and either is a heading (<h2>..<h6>)
or the tree shows it so: its element, an element inside it or one of its nearest ancestors holds exactly its text
and is bold (<b>, <strong>, font-weight: bold), large (<big>, <font size=4..7 or +1..+4>, a font-size of 16px /
12pt / 1.2em or more) or has an id or class token naming a title (title, headline, biaoti, tit; not subtitle).
shown_headline takes the nearest prominent block among the first kept block (when the tree shows it so, not by its
heading alone: a section's heading may open the body) and the HEADLINE_WINDOW blocks above it, passing over short
lines (a date, a byline) and stopping at a longer one; a byline is never the headline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from bodyblocks.extraction.roles import BYLINE_CHARS, is_byline
from bodyblocks.types import Block, Document

PROMINENT = "prominent"  # Document.extra's key: indices of the blocks the tree shows as prominent (add_prominent)
TITLE_CHARS = (2, 100)  # a headline's characters, white space excluded
HEADLINE_WINDOW = 3  # blocks above the first kept one looked at
_ANCESTORS = 3  # ancestors of a block's element looked at (a cell around a <div>)
_MAX_CANDIDATES = 400  # short blocks looked up in the tree per page
_TITLE_TOKEN = re.compile(r"(?<!sub)(?<!sub[-_])(?:title|headline)|biaoti|^tit(?:$|[-_\d])|[-_]tit$", re.IGNORECASE)
_BOLD_STYLE = re.compile(r"font-weight\s*:\s*(?:bold|bolder|[6-9]00)", re.IGNORECASE)
_FONT_SIZE = re.compile(r"font-size\s*:\s*(\d+(?:\.\d+)?)\s*(px|pt|em|rem)", re.IGNORECASE)
_LARGE = {"px": 16.0, "pt": 12.0, "em": 1.2, "rem": 1.2}
_SPACE = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _flat(text: str) -> str:
    return _SPACE.sub("", text)


def _large_font(size: str) -> bool:
    size = size.strip()
    if size.startswith("+"):
        return size[1:].isdigit() and int(size[1:]) >= 1
    return size.isdigit() and int(size) >= 4


def _shows_prominent(el: Any) -> bool:
    """Whether this element, by its own tag and attributes, is bold, large or named a title."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in ("b", "strong", "big") or (tag == "font" and _large_font(el.get("size") or "")):
        return True
    style = el.get("style") or ""
    if style and (_BOLD_STYLE.search(style) or any(
            float(m.group(1)) >= _LARGE[m.group(2).lower()] for m in _FONT_SIZE.finditer(style))):
        return True
    tokens = (el.get("class") or "").split() + (el.get("id") or "").split()
    return any(_TITLE_TOKEN.search(t) for t in tokens)


def _prominent_in_tree(el: Any, flat: str) -> bool:
    """Whether an element holding exactly the block's text (white space aside) shows it as prominent: the block's
    element, one inside it or one of its nearest ancestors."""
    nodes = [el, *[x for x in el.iterdescendants() if isinstance(x.tag, str)]]
    parent = el.getparent()
    for _ in range(_ANCESTORS):
        if parent is None or parent.tag in ("body", "html"):
            break
        nodes.append(parent)
        parent = parent.getparent()
    return any(_shows_prominent(x) and _flat(x.xpath("string()")) == flat for x in nodes)


def _short(block: Block) -> bool:
    """Short, without links, and of two words or more (four CJK characters): "Menu" or "新闻" is no headline."""
    low, high = TITLE_CHARS
    if not low <= block.text_len <= high or block.link_len:
        return False
    return len(block.text.split()) >= 2 or len(_CJK.findall(block.text)) >= 4


def add_prominent(doc: Document, root: Any) -> Document:
    """On a page with no title channel (doc.title empty) parsed by lxml (`root`: its root element), the indices of
    its short blocks that the tree shows as prominent, in doc.extra[PROMINENT]; returned."""
    if doc.title or root is None:
        return doc
    tree, found = root.getroottree(), []
    for block in [b for b in doc.blocks if _short(b) and not b.heading_level][:_MAX_CANDIDATES]:
        if block.xpath.startswith("/..."):  # a path cut short on a page nested too deep
            continue
        try:
            els = tree.xpath(block.xpath)
        except Exception:  # noqa: BLE001, S112 - a path lxml cannot read: no cue
            continue
        if els and _prominent_in_tree(els[0], _flat(block.text)):
            found.append(block.index)
    doc.extra[PROMINENT] = tuple(found)
    return doc


def shown_headline(blocks: Sequence[Block], keep: np.ndarray, prominent: Sequence[int]) -> int | None:
    """The headline of a page with no title channel: the nearest prominent block (module docstring) among the first
    kept block and the HEADLINE_WINDOW blocks above it, with kept text after it; None when there is none."""
    if not keep.any():
        return None
    first, marked = int(np.argmax(keep)), set(prominent)
    for i in range(first, max(-1, first - HEADLINE_WINDOW - 1), -1):
        block = blocks[i]
        shown = i in marked or (i < first and block.heading_level >= 2)  # the first kept block: by the tree alone
        candidate = _short(block) and shown and not is_byline(block)
        if candidate and keep[i + 1:].any():
            return i
        if i < first and block.text_len > BYLINE_CHARS:  # a paragraph between: the headline is not just above
            return None
    return None
