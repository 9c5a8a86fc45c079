"""lxml helpers shared by the baselines: parse, text lines, per-node statistics, title. The helpers the heuristic's
pruning also uses (dropping elements, a block's lines, the body element) live beside it in pruning.py.

Every walk is iterative (pages nest 10,000 deep), and all text counts exclude white space.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import lxml.html
from lxml import etree

from bodyblocks.baselines.pruning import (
    CONTROL,
    HTML_PARSER,
    HtmlElement,
    block_lines,
    body_of,
    parse_text,
    text_blocks,
)
from bodyblocks.baselines.rules import PARAGRAPH_TAGS, count_chars, count_punct
from bodyblocks.page.decode import to_text
from bodyblocks.types import Decoded

_SPACES = re.compile(r"[^\S\n]+")
_TITLE_SEPARATORS = re.compile(r"\s+[-|_–—·:]\s+|_|｜|\|")


def parse(html: str | bytes) -> tuple[HtmlElement, Decoded]:
    """Decode (bytes) and parse with libxml2's recovering HTML parser (pruning.parse_text); raise EmptyInput for
    no content."""
    decoded = to_text(html)
    return parse_text(decoded.text), decoded


def fragment_lines(html: str) -> list[str]:
    """Text lines of an HTML fragment (e.g. a peer's output HTML); [] when nothing parses."""
    if not html.strip():
        return []
    try:
        root = lxml.html.document_fromstring(CONTROL.sub("", html), parser=HTML_PARSER)
    except (etree.ParserError, ValueError):
        return []
    return text_lines(body_of(root))


def clean_line(line: str) -> str:
    """Collapse runs of white space inside a line."""
    return _SPACES.sub(" ", line).strip()


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
