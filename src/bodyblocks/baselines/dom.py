"""lxml helpers shared by the baselines: parse, drop elements, text lines, per-node statistics, title.

Every walk is iterative (pages nest 10,000 deep), and all text counts exclude white space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import lxml.html
from lxml import etree

from bodyblocks.baselines.rules import PARAGRAPH_TAGS, count_chars, count_punct
from bodyblocks.errors import EmptyInput
from bodyblocks.page.decode import to_text
from bodyblocks.page.htmltags import BASELINE_BLOCK_TAGS
from bodyblocks.types import Decoded

HtmlElement = etree._Element  # lxml.html elements, or plain ones from the capped re-parse
MAX_DEPTH = 1024  # the capped re-parse flattens deeper elements (libxml2 stops building trees at 2048)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SPACES = re.compile(r"[^\S\n]+")
_PARSER = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
_TITLE_SEPARATORS = re.compile(r"\s+[-|_–—·:]\s+|_|｜|\|")
S = TypeVar("S")


def parse(html: str | bytes) -> tuple[HtmlElement, Decoded]:
    """Decode (bytes) and parse with libxml2's recovering HTML parser; raise EmptyInput for no content."""
    decoded = to_text(html)
    text = _CONTROL.sub("", _XML_DECL.sub("", decoded.text, count=1))
    if not text.strip():
        raise EmptyInput("page holds no markup or text")
    try:
        root = lxml.html.document_fromstring(text, parser=_PARSER)
        if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in _PARSER.error_log):
            root = _parse_capped(text)  # too deep: libxml2 dropped everything past the limit
    except (etree.ParserError, ValueError) as exc:
        raise EmptyInput(f"nothing to parse ({exc})") from exc
    if root is None:
        raise EmptyInput("nothing to parse")
    return root, decoded


class _CappedBuilder:
    """Parser target that builds the tree down to MAX_DEPTH; deeper tags only separate lines."""

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.builder = etree.TreeBuilder()
        self.depth = 0
        self.max_depth = max_depth

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth <= self.max_depth:
            self.builder.start(tag, dict(attrib))
        elif tag.lower() in BASELINE_BLOCK_TAGS or tag.lower() == "br":
            self.builder.data("\n")

    def end(self, tag: str) -> None:
        if self.depth <= self.max_depth:
            self.builder.end(tag)
        elif tag.lower() in BASELINE_BLOCK_TAGS:
            self.builder.data("\n")
        self.depth -= 1

    def data(self, text: str) -> None:
        self.builder.data(text)

    def close(self) -> etree._Element | None:
        return self.builder.close()


def _parse_capped(text: str) -> etree._Element | None:
    """Event-driven re-parse (no libxml2 depth limit) into a tree of at most MAX_DEPTH levels."""
    parser = etree.HTMLParser(target=_CappedBuilder(), huge_tree=True, remove_comments=True, remove_pis=True)
    return etree.fromstring(text, parser)


def fragment_lines(html: str) -> list[str]:
    """Text lines of an HTML fragment (e.g. a peer's output HTML); [] when nothing parses."""
    if not html.strip():
        return []
    try:
        root = lxml.html.document_fromstring(_CONTROL.sub("", html), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return []
    return text_lines(body_of(root))


def tag_of(el: etree._Element) -> str:
    """Lower-case tag name; "" for comments and processing instructions."""
    return el.tag.lower() if isinstance(el.tag, str) else ""


def remove_keep_tail(el: etree._Element) -> None:
    """Remove an element and its subtree; its tail text joins the previous sibling or the parent."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def drop_tags(root: HtmlElement, tags: Iterable[str]) -> None:
    """Remove elements by tag name, plus comments and processing instructions."""
    kinds = (etree.Comment, etree.ProcessingInstruction, etree.Entity, *frozenset(tags))  # lxml's HTML parser
    for el in [el for el in root.iter(*kinds) if el is not root]:  # writes tag names in lower case
        remove_keep_tail(el)


def class_id(el: etree._Element) -> str:
    """The element's class and id attributes joined by a space."""
    return f"{el.get('class') or ''} {el.get('id') or ''}".strip()


def text_blocks(el: etree._Element) -> list[tuple[str, str]]:
    """(tag of the block element, text) pairs in document order; <br> is a newline inside a block."""
    blocks: list[tuple[str, str]] = []
    parts: list[str] = []
    owners: list[str] = [tag_of(el) or "div"]

    def flush() -> None:
        text = "".join(parts)
        parts.clear()
        if text and not text.isspace():
            blocks.append((owners[-1], text))

    for event, node in etree.iterwalk(el, events=("start", "end")):
        tag = node.tag
        tag = tag.lower() if isinstance(tag, str) else ""  # tag_of
        if event == "start":
            if tag in BASELINE_BLOCK_TAGS:
                flush()
                owners.append(tag)
            elif tag == "br":
                parts.append("\n")
            if tag:
                text = node.text
                if text:
                    parts.append(text)
        else:
            if tag in BASELINE_BLOCK_TAGS:
                flush()
                owners.pop()
            tail = node.tail
            if tail and node is not el:
                parts.append(tail)
    flush()
    return blocks


def clean_line(line: str) -> str:
    """Collapse runs of white space inside a line."""
    return _SPACES.sub(" ", line).strip()


def block_lines(text: str) -> list[str]:
    """Non-empty, white-space-normalised lines of one block's text: clean_line of each line (str.split's
    white space is the regex \\s, so a line's words joined by single spaces are its clean_line)."""
    return [c for c in (" ".join(x.split()) for x in text.split("\n")) if c]


def text_lines(el: etree._Element) -> list[str]:
    """The element's visible text, one block (or <br>-separated line) per line."""
    return [line for _, text in text_blocks(el) for line in block_lines(text)]


@dataclass
class NodeStats:
    """Aggregated counts over one element's subtree (text excludes white space)."""

    chars: int = 0
    link_chars: int = 0
    tags: int = 0  # elements in the subtree, the element itself excluded
    link_tags: int = 0
    punct: int = 0
    paragraphs: int = 0  # <p>, <pre>, <blockquote> holding text

    @property
    def link_density(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0


def node_stats(root: etree._Element) -> dict[etree._Element, NodeStats]:
    """Statistics of every element's subtree, computed bottom-up in one post-order walk."""
    stats: dict[etree._Element, NodeStats] = {}
    for _, el in etree.iterwalk(root, events=("end",)):
        if isinstance(el.tag, str):
            stats[el] = _one_node(el, stats.get)
    return stats


def _one_node(el: etree._Element, get: Callable[[etree._Element], NodeStats | None]) -> NodeStats:
    """An element's statistics from its own text, its children's tails and its children's statistics."""
    own = el.text
    chars, marks = (count_chars(own), count_punct(own)) if own else (0, 0)
    link_chars = tags = link_tags = paragraphs = 0
    for child in el:
        c = get(child)
        if c is not None:
            chars += c.chars
            link_chars += c.link_chars
            tags += c.tags + 1
            link_tags += c.link_tags
            marks += c.punct
            paragraphs += c.paragraphs
        tail = child.tail
        if tail:
            chars += count_chars(tail)
            marks += count_punct(tail)
    tag = el.tag.lower()
    if tag == "a":
        link_chars, link_tags = chars, link_tags + 1
    if tag in PARAGRAPH_TAGS and chars:
        paragraphs += 1
    return NodeStats(chars, link_chars, tags, link_tags, marks, paragraphs)


def drop_with_stats(doomed: Iterable[etree._Element], stats: dict[etree._Element, S],
                    recompute: Callable[[etree._Element], S]) -> None:
    """Remove the doomed elements (subtree and all, keeping their tails: remove_keep_tail) and bring
    `stats` (per-element statistics of the tree, built bottom-up in post-order, such as node_stats) up to
    date, equal to a fresh walk: `recompute(node)` is a node's statistics from its children's in `stats`.
    `doomed` may be a generator that reads `stats` as it goes: the removed subtrees have left it by then,
    and the other entries keep their values until the last element is through.

    Linear in the tree, whatever its depth: the removed subtrees leave the dict (an element already gone
    with a removed ancestor is skipped); their ancestors are marked, each once (the climb stops at one
    already marked), then recomputed from their children in the dict's post-order, children first.
    """
    dirty: set[etree._Element] = set()
    for el in doomed:
        if el not in stats:  # inside a subtree removed before it (or not an element the walk counted)
            continue
        parent = el.getparent()
        remove_keep_tail(el)
        for x in el.iter():
            stats.pop(x, None)
        while parent is not None and parent in stats and parent not in dirty:
            dirty.add(parent)
            parent = parent.getparent()
    if dirty:
        for node in [n for n in stats if n in dirty]:  # post-order: a node's children are up to date
            stats[node] = recompute(node)


def body_of(root: HtmlElement) -> HtmlElement:
    """The <body> element, or the root when there is none."""
    body = root.find("body")
    return body if body is not None else root


def page_title(root: HtmlElement) -> str:
    """Title channel: og:title, else the first <h1> that the <title> contains, else <title>'s main part."""
    og = root.xpath("//meta[@property='og:title']/@content")
    if og and str(og[0]).strip():
        return clean_line(str(og[0]))
    title_el = root.find(".//title")
    title = clean_line("".join(title_el.itertext())) if title_el is not None else ""
    for h1 in root.iter("h1"):
        text = clean_line("".join(h1.itertext()))
        if text and (not title or text in title):
            return text
    if not title:
        return ""
    parts = [p.strip() for p in _TITLE_SEPARATORS.split(title) if p.strip()]
    return max(parts, key=len) if parts else title
