"""An article a browser does not show until a script runs: a page whose visible text has no article but whose
<noscript>, <template> or <script type="text/template"> holds one (a blog whose post sits in <noscript> beside a
full sidebar), or a JSON attribute an app reads its content from (JSON_ATTRIBUTES: Discourse's `data-preloaded`,
React's `data-props`, Inertia's `data-page`), whose strings of paragraph markup are shown after its element.

    if not visible_article(blocks) and reveal_hidden(root, blocks):   # segment.py, after the walk
        blocks = walk_blocks(root, "lxml")                            # the containers shown, the page walked again

Hidden text is read only where the visible page has no article of its own (visible_article), so that it is never
joined to one: a spam <template> in an article's footer, a cookie wall in <noscript> under a brief, a noscript copy
of the article with a word changed. The test is on the visible blocks, at segmentation, not on the extraction:
the batch runner segments pages in its workers apart from the model that classifies them, so what the model would
keep is not known here. A visible article is VISIBLE_ARTICLE characters in written blocks: WRITTEN_BLOCK characters or
more, with punctuation, at most half link text, no heading (the written text the model keeps; menus, link lists,
headings and buttons are not). That is two sentences: a two-paragraph brief has it, an app shell's "enable
JavaScript" line or a blog's sidebar of links has not.

A hidden container counts with the paragraph text (<p>, white space excluded) that the visible page does not show
already (a lazy-image <noscript> and a copy of a visible block count nothing). The containers are shown (made
<div>s; a script template's markup parsed into one) only when together they hold at least HIDDEN_ARTICLE such
characters. What is read is bounded, so that a 10 MB template costs about what a visible page of the same size
does: at most MAX_TEMPLATE_MARKUP characters of script templates and JSON strings are parsed (a JSON attribute
of at most MAX_JSON_ATTRIBUTE characters, MAX_JSON_VALUES values looked at, JSON inside a string read too),
MAX_HIDDEN_PARAGRAPHS paragraphs looked at, and MAX_HIDDEN_TEXT characters of text shown (limit_hidden: the
content after that is dropped). Only lxml trees (the default parser) are revealed and cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from bodyblocks.types import Block

HIDDEN_ARTICLE = 500  # characters of new paragraph text (white space excluded) that make a hidden article
VISIBLE_ARTICLE = 100  # characters of written visible text that make an article of the visible page (module docstring)
WRITTEN_BLOCK = 40  # a written block's characters, at least (a sentence; a menu item or a button is shorter)
MAX_HIDDEN_TEXT = 200_000  # characters of hidden text shown, at most (a long article holds some tens of thousands)
MAX_HIDDEN_PARAGRAPHS = 5_000  # hidden paragraphs looked at, at most
MAX_TEMPLATE_MARKUP = 1_000_000  # characters of script templates' markup parsed, at most
TEMPLATE_TYPES = frozenset(["text/template", "text/x-template", "text/html", "text/x-handlebars-template",
                            "text/ng-template", "text/x-jsrender"])
# Attributes whose JSON value holds an app's content (its strings of paragraph markup are read as hidden text)
JSON_ATTRIBUTES = ("data-preloaded", "data-props", "data-react-props", "data-page")
MAX_JSON_ATTRIBUTE = 5_000_000  # characters of one JSON attribute, at most (a longer one is not read)
MAX_JSON_VALUES = 100_000  # values of JSON attributes looked at, at most
_SPACE = re.compile(r"\s+")
_MARKUP = re.compile(r"<p[\s>]", re.IGNORECASE)


def _flat(text: str) -> str:
    return _SPACE.sub("", text)


def visible_article(blocks: Iterable[Block]) -> bool:
    """Whether the visible page holds an article of its own: VISIBLE_ARTICLE characters in written blocks (module
    docstring)."""
    written = 0
    for b in blocks:
        if b.text_len >= WRITTEN_BLOCK and b.punct_count and b.link_density <= 0.5 and not b.heading_level:
            written += b.text_len
            if written >= VISIBLE_ARTICLE:
                return True
    return False


def _json_markup(value: str, budget: int) -> list[str]:
    """The strings of paragraph markup in a JSON attribute's value, in order, up to `budget` characters (a string
    that is JSON itself is read as well: Discourse's preloaded data nests JSON in strings)."""
    found: list[str] = []
    if not value.lstrip().startswith(("{", "[")) or len(value) > MAX_JSON_ATTRIBUTE:
        return found
    todo: list[Any] = [value]
    looked = 0
    while todo and budget > 0 and looked < MAX_JSON_VALUES:
        item = todo.pop()
        looked += 1
        if isinstance(item, str):
            if item.lstrip().startswith(("{", "[")) and len(item) <= MAX_JSON_ATTRIBUTE:
                try:
                    todo.append(json.loads(item))
                    continue
                except (ValueError, RecursionError):
                    pass
            if _MARKUP.search(item):
                found.append(item[:budget])
                budget -= len(found[-1])
        elif isinstance(item, dict):
            todo.extend(reversed(list(item.values())))  # popped in the document's order
        elif isinstance(item, list):
            todo.extend(reversed(item))
    return found


def _parsed_markup(text: str) -> Any:
    """Markup parsed into one <div> (its HTML parser's body), or None."""
    from lxml import etree

    content = etree.fromstring(f"<div>{text}</div>", etree.HTMLParser(huge_tree=True))
    if content is None:
        return None
    div = content.find(".//body/div")
    return div if div is not None else content


def _containers(root: Any) -> list[tuple[Any, Any]]:
    """(element, the element its content is shown as) of every <noscript>, <template> and script template below
    the root that holds a paragraph, then of every element whose JSON attribute holds paragraph markup; a script
    template's markup and a JSON attribute's strings are parsed into a <div>, up to MAX_TEMPLATE_MARKUP characters
    of all of them."""

    found = []
    markup = MAX_TEMPLATE_MARKUP
    for el in root.iter("noscript", "template", "script"):
        if next(el.iterancestors("noscript", "template"), None) is not None:
            continue  # inside another container: counted and shown with it
        if el.tag != "script":
            if next(el.iter("p"), None) is not None:
                found.append((el, el))
        elif markup > 0 and (el.get("type") or "").strip().lower() in TEMPLATE_TYPES and _MARKUP.search(el.text or ""):
            text = el.text[:markup]
            markup -= len(text)
            content = _parsed_markup(text)
            if content is not None:
                found.append((el, content))
    query = " or ".join(f"@{a}" for a in JSON_ATTRIBUTES)
    for el in root.xpath(f"//*[{query}]") if markup > 0 else ():
        strings = [s for a in JSON_ATTRIBUTES for s in _json_markup(el.get(a) or "", markup)]
        if strings:
            text = "".join(f"<div>{s}</div>" for s in strings)[:markup]
            markup -= len(text)
            content = _parsed_markup(text)
            if content is not None:
                found.append((el, content))
        if markup <= 0:
            break
    return found


def _show_after(el: Any, content: Any) -> None:
    """Place a JSON attribute's content after its element, or at the end of <body> where the element is no part of
    the body (a <meta> of <head>, the <body> or <html> itself)."""
    if el.tag in ("html", "head", "body") or next(el.iterancestors("head"), None) is not None \
            or next(el.iterancestors("body"), None) is None:
        root = el.getroottree().getroot()
        body = root.find("body")
        (body if body is not None else root).append(content)
    else:
        el.addnext(content)


def _new_paragraphs(containers: Sequence[tuple[Any, Any]], visible: set[str]) -> tuple[list[int], Any]:
    """Per container, the characters of its paragraphs whose text no visible block shows; and the paragraph where
    MAX_HIDDEN_PARAGRAPHS ran out (None: all were looked at), after which nothing is counted."""
    counts = []
    looked = 0
    for _, content in containers:
        total = 0
        for p in content.iter("p"):
            looked += 1
            if looked > MAX_HIDDEN_PARAGRAPHS:
                counts.append(total)
                return counts, p
            text = _flat(p.xpath("string()"))
            if text and text not in visible:
                total += len(text)
        counts.append(total)
    return counts, None


def cut_after(top: Any, el: Any) -> None:
    """Drop what follows `el` inside `top` (an ancestor of it, or itself): its tail, its later siblings, and so on up
    to `top`, whose own tail stays."""
    node = el
    while node is not top:
        parent = node.getparent()
        node.tail = None
        for later in list(node.itersiblings()):
            parent.remove(later)
        node = parent


def limit_hidden(elements: Iterable[Any], budget: int = MAX_HIDDEN_TEXT) -> int:
    """Cut the contents of `elements` (hidden containers, in document order) after `budget` characters of text in
    all: the text where it runs out is cut there, what follows in that element dropped, and the later elements
    emptied. Returns the budget left."""
    from lxml import etree

    for top in elements:
        if budget <= 0:
            for child in list(top):
                top.remove(child)
            top.text = None
            continue
        for event, node in etree.iterwalk(top, events=("start", "end", "comment", "pi")):
            if event == "start" and node.text:
                if len(node.text) >= budget:  # its text is the last read: its children and what follows go
                    node.text = node.text[:budget]
                    for child in list(node):
                        node.remove(child)
                    cut_after(top, node)
                    budget = 0
                    break
                budget -= len(node.text)
            if event != "start" and node is not top and node.tail:  # an element's end, a comment, an instruction
                if len(node.tail) >= budget:
                    tail = node.tail[:budget]
                    cut_after(top, node)
                    node.tail = tail
                    budget = 0
                    break
                budget -= len(node.tail)
    return budget


def reveal_hidden(root: Any, blocks: Sequence[Block]) -> bool:
    """Show the hidden containers of an lxml tree that hold the page's article (module docstring; the caller has
    found no visible article); returns whether any was shown (the tree is then changed: walk it again)."""
    if root is None or not hasattr(root, "iter"):
        return False
    containers = _containers(root)
    if not containers:
        return False
    counts, stop = _new_paragraphs(containers, {_flat(b.text) for b in blocks})
    if sum(counts) < HIDDEN_ARTICLE:
        return False
    holding = [pair for pair, count in zip(containers, counts, strict=False) if count]
    if stop is not None and counts[-1]:  # the paragraphs looked at ran out in the last one held: none after is shown
        cut_after(containers[len(counts) - 1][1], stop)
        stop.getparent().remove(stop)
    limit_hidden([content for _, content in holding])
    for el, content in holding:
        if content is el:
            el.tag = "div"
        elif el.tag != "script":  # a JSON attribute's holder stays as it is
            _show_after(el, content)
        else:  # a script template: its markup parsed, in its place
            content.tail = el.tail
            el.getparent().replace(el, content)
    return True
