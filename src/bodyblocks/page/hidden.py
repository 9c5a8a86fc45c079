"""An article a browser does not show until a script runs: a page whose visible text lacks it but whose <noscript>,
<template> or <script type="text/template"> holds it (a blog whose post sits in <noscript> beside a full sidebar).

    if reveal_hidden(root, blocks):   # segment.py, after the walk: the containers shown, the page walked again
        blocks = walk_blocks(root, "lxml")

A hidden container counts with the paragraph text (<p>, white space excluded) that the visible page does not hold
already (a lazy-image <noscript> and a copy of the visible article count nothing). The containers are shown (made
<div>s; a script template's markup parsed into one) only when together they hold at least HIDDEN_ARTICLE such
characters and more than the visible page's own paragraphs: the visible body is missing or short, and the hidden
copy is long. Only lxml trees (the default parser) are revealed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bodyblocks.types import Block

HIDDEN_ARTICLE = 500  # characters of new paragraph text (white space excluded) that make a hidden article
TEMPLATE_TYPES = frozenset(["text/template", "text/x-template", "text/html", "text/x-handlebars-template",
                            "text/ng-template", "text/x-jsrender"])
_SPACE = re.compile(r"\s+")
_MARKUP = re.compile(r"<p[\s>]", re.IGNORECASE)


def _flat(text: str) -> str:
    return _SPACE.sub("", text)


def _containers(root: Any) -> list[tuple[Any, Any]]:
    """(element, the tree of its content) of every <noscript>, <template> and script template below the root that
    holds a paragraph."""
    from lxml import etree

    found = []
    for el in root.iter("noscript", "template", "script"):
        if next(el.iterancestors("noscript", "template"), None) is not None:
            continue  # inside another container: counted and shown with it
        if el.tag != "script":
            if next(el.iter("p"), None) is not None:
                found.append((el, el))
        elif (el.get("type") or "").strip().lower() in TEMPLATE_TYPES and _MARKUP.search(el.text or ""):
            content = etree.fromstring(f"<div>{el.text}</div>", etree.HTMLParser())
            if content is not None:
                found.append((el, content))
    return found


def _new_paragraphs(content: Any, visible: str) -> int:
    """Characters of the paragraphs in `content` whose text the visible page (`visible`, flattened) does not hold."""
    total = 0
    for p in content.iter("p"):
        text = _flat(p.xpath("string()"))
        if text and text not in visible:
            total += len(text)
    return total


def reveal_hidden(root: Any, blocks: Sequence[Block]) -> bool:
    """Show the hidden containers of an lxml tree that hold the page's article (module docstring); returns whether
    any was shown (the tree is then changed: walk it again)."""
    if root is None or not hasattr(root, "iter"):
        return False
    containers = _containers(root)
    if not containers:
        return False
    visible = _flat("".join(b.text for b in blocks))
    shown_paragraphs = sum(b.text_len for b in blocks if b.tag == "p")
    holding = [(el, content) for el, content in containers if _new_paragraphs(content, visible)]
    hidden = sum(_new_paragraphs(content, visible) for _, content in holding)
    if hidden < HIDDEN_ARTICLE or hidden <= shown_paragraphs:
        return False
    for el, content in holding:
        if content is el:
            el.tag = "div"
        else:  # a script template: its markup parsed, in its place
            body = content.find(".//body/div")
            div = body if body is not None else content
            div.tail = el.tail
            el.getparent().replace(el, div)
    return True
