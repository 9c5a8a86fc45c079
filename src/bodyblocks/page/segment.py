"""HTML -> ordered text blocks: a depth-first walk of the DOM that keeps every visible character.

Stages:
  1. decode bytes (decode.py) and cap the size;
  2. parse: BeautifulSoup with the lxml parser (the user's choice), or lxml directly (same tree, faster);
  3. walk the tree depth-first into blocks (walk.py: invisible subtrees skipped, text cut into blocks at
     block-level tags, tag paths, xpaths and DOM features); an app shell whose visible text is almost
     nothing is walked again with its <noscript> content visible (what a browser without JavaScript
     displays: Discourse and many apps serve their pages there); a page whose visible text has no article
     while a <noscript>, <template>, script template or JSON attribute (data-preloaded, data-props) holds a
     long one shows those (hidden.py: never beside a visible article, bounded in size, flagged
     Document.hidden_source);
  4. the title (<title>, og:title, first <h1>) is its own channel.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from bodyblocks.errors import InputError
from bodyblocks.page.bounds import bound_attributes, check_elements
from bodyblocks.page.builder import WS
from bodyblocks.page.decode import read_bytes, to_text
from bodyblocks.page.hidden import JSON_ATTRIBUTES, limit_hidden, reveal_hidden, visible_article
from bodyblocks.page.inline_boxes import inline_boxes_bs4, inline_boxes_lxml
from bodyblocks.page.metadata import METADATA, page_metadata
from bodyblocks.page.walk import walk_blocks
from bodyblocks.types import Block, Decoded, Document, Extraction

SEGMENTER_VERSION = "10"  # bump when blocks change: dataset caches key on it
MAX_CHARS = 6_000_000  # longer pages are cut here (Document.truncated); parsing time grows linearly
# An app shell: less visible text than this, and more inside <noscript>, is walked again with noscript shown.
NOSCRIPT_FALLBACK_CHARS = 500
_HIDDEN_MARKS = ("<noscript", "<template", "text/template", "text/x-template", "text/html", "-template",
                 *JSON_ATTRIBUTES)

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# Browsers keep parsing into <body> after </body></html> (HTML5 "after after body"); so do we, with both parsers.
_END_BODY = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
# A <title> never closed would swallow the whole page as its text; close it where its own text ends.
_OPEN_TITLE = re.compile(r"(<title\b[^>]*>[^<]*)", re.IGNORECASE)


# ----------------------------------------------------------------------------------------- parsing
def _prepare(html: str | bytes, max_chars: int) -> tuple[str, bool, Decoded]:
    """Decode and cap the page; returns (the text to parse, whether it was cut, the decoded page)."""
    decoded = to_text(html)
    text = _END_BODY.sub("", _XML_DECL.sub("", decoded.text, count=1).replace("\x00", ""))
    if not _contains(text, "</title") and _contains(text, "<title"):
        text = _OPEN_TITLE.sub(r"\1</title>", text, count=1)
    truncated = len(text) > max_chars
    return (text[:max_chars] if truncated else text), truncated, decoded


def _contains(text: str, *lowercase: str) -> bool:
    """Whether one of the `lowercase` strings is in the text, its ASCII letters in either case (as a browser reads
    tag and attribute names): each searched as it is first, then one case-blind search for them all, with no
    lowered copy of the page."""
    return any(s in text for s in lowercase) or _case_blind(lowercase).search(text) is not None


@functools.lru_cache(maxsize=16)
def _case_blind(lowercase: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, lowercase)), re.IGNORECASE | re.ASCII)


class _TooDeep(Exception):
    """libxml2 stopped at its nesting limit (2048); BeautifulSoup's builder has none."""


def parse(text: str, parser: str = "bs4") -> Any:
    """Parse decoded HTML: a BeautifulSoup tree ("bs4") or an lxml root element ("lxml")."""
    check_elements(text)
    text = bound_attributes(text)[0]  # libxml2's time grows with the square of a tag's attributes
    if parser == "bs4":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(text, "lxml")
        _body_out_of_head_bs4(soup)
        if _contains(text, "<table", "<figure"):
            inline_boxes_bs4(soup)
        return soup
    if parser == "lxml":
        from lxml import etree

        lxml_parser = _lxml_parser()
        root = etree.fromstring(text, lxml_parser) if text and not text.isspace() else None  # text.strip(), uncopied
        if any(e.type_name == "ERR_RESOURCE_LIMIT" or "Excessive depth" in e.message for e in lxml_parser.error_log):
            raise _TooDeep("nesting deeper than libxml2's limit")
        if root is None:
            return etree.Element("html")
        _body_out_of_head_lxml(root)
        if _contains(text, "<table", "<figure"):
            inline_boxes_lxml(root)
        return root
    raise ValueError(f"unknown parser {parser!r} (bs4 or lxml)")


# Elements that belong in <head>. An HTML5 parser (a browser's) ends the head at the first other element and
# puts it, and what follows, in the body; libxml2 keeps it in <head>, which the walk skips: a page whose
# content sits in an unknown element after its <meta>s came back with no block at all (docs/EVALUATION.md, DOM
# fidelity).
HEAD_CONTENT = frozenset("base basefont bgsound link meta title noscript noframes style script template".split())


def _body_out_of_head_lxml(root: Any) -> None:
    """Move the elements of <head> that are no head content to the start of <body> (made when missing),
    in order, as an HTML5 parser places them; head content stays where it is (it is never displayed)."""
    head = root.find("head")
    if head is None:
        return
    stray = [el for el in head if isinstance(el.tag, str) and el.tag.lower() not in HEAD_CONTENT]
    if not stray:
        return
    body = root.find("body")
    if body is None:
        from lxml import etree

        body = etree.SubElement(root, "body")
    lead, body.text = body.text, None  # the body's own first text comes after them
    for k, el in enumerate(stray):
        body.insert(k, el)  # with its tail: the text after it is body text too, as in a browser
    if lead:
        stray[-1].tail = (stray[-1].tail or "") + lead


def _body_out_of_head_bs4(soup: Any) -> None:
    """_body_out_of_head_lxml on a BeautifulSoup tree (the same libxml2 tree)."""
    from bs4 import Comment, NavigableString

    head = soup.find("head")
    if head is None:
        return
    stray = [el for el in head.find_all(recursive=False) if el.name.lower() not in HEAD_CONTENT]
    if not stray:
        return
    body = soup.find("body")
    if body is None:
        body = soup.new_tag("body")
        (soup.find("html") or soup).append(body)
    moved = []
    for el in stray:  # each with the text after it, as lxml moves an element's tail
        run, nxt = [el], el.next_sibling
        while nxt is not None and isinstance(nxt, NavigableString) and not isinstance(nxt, Comment):
            run.append(nxt)
            nxt = nxt.next_sibling
        moved += run
    for k, node in enumerate(moved):
        body.insert(k, node.extract())


_PARSER: Any = None


def _lxml_parser() -> Any:
    """One shared libxml2 HTML parser; huge_tree lifts libxml2's depth limit like BeautifulSoup's builder.

    lxml's plain HTMLParser (not lxml.html's): the same tree, without lxml.html's per-element Python class
    lookup, which cost about a tenth of the walk.
    """
    global _PARSER
    if _PARSER is None:
        from lxml import etree

        _PARSER = etree.HTMLParser(huge_tree=True, remove_comments=False)
    return _PARSER


def _title(tree: Any, parser: str) -> str:
    """The title channel: og:title, else <title>, else the first <h1> (each looked up only when those before
    it give no text)."""
    if parser == "bs4":
        def og() -> Any:
            meta = tree.find("meta", attrs={"property": "og:title"})
            return meta.get("content") if meta else None

        def title() -> Any:
            t = tree.find("title")
            return t.get_text() if t else None

        def h1() -> Any:
            h = tree.find("h1")
            return h.get_text(" ") if h else None
    else:
        def og() -> Any:
            content = tree.xpath("//meta[@property='og:title']/@content")
            return content[0] if content else None

        def title() -> Any:
            t = tree.xpath("//title")
            return t[0].xpath("string()") if t else None

        def h1() -> Any:
            h = tree.xpath("//h1")
            return h[0].xpath("string()") if h else None
    for candidate in (og, title, h1):
        c = candidate()
        if c and c.strip():
            return WS.sub(" ", str(c)).strip()
    return ""


def segment(html: str | bytes, *, parser: str = "auto", max_chars: int = MAX_CHARS, marks: bool = False) -> Document:
    """Cut a page into ordered text blocks.

    Args:
        html: page bytes (decoded with decode.py) or text.
        parser: "bs4" (BeautifulSoup with the lxml parser), "lxml" (lxml.html directly: the same blocks,
            about 2.5x faster; tests/test_segment.py checks the equality on dataset pages), which hands
            pages nested deeper than libxml2's limit of 2048 to BeautifulSoup; "auto" is "lxml".
        max_chars: pages longer than this are cut (flagged in Document.truncated).
        marks: each block notes its links and emphasis (Block.marks) for Markdown output.
    Returns:
        Document with blocks in document order, the title, and decoding facts.
    Raises:
        bodyblocks.errors.InputError: empty, binary or undecodable input.
    """
    return segment_tree(html, parser=parser, max_chars=max_chars, marks=marks)[0]


def segment_tree(html: str | bytes, *, parser: str = "auto", max_chars: int = MAX_CHARS,
                 owners: list[Any] | None = None, marks: bool = False) -> tuple[Document, Any]:
    """segment, with the lxml root element it walked (None when BeautifulSoup parsed the page): the
    segmenter leaves it as parsed, so a caller may read or prune it afterwards without parsing again.
    `owners`: a list that gets each block's owning element (walk.walk_blocks), in block order."""
    doc, tree, _ = segment_parsed(html, parser=parser, max_chars=max_chars, owners=owners, marks=marks)
    return doc, tree


def segment_parsed(html: str | bytes, *, parser: str = "auto", max_chars: int = MAX_CHARS,
                   owners: list[Any] | None = None, marks: bool = False, dates: bool = True
                   ) -> tuple[Document, Any, str]:
    """segment_tree, with the page's decoded text as well (decode.to_text's, before the segmenter trims it): what
    the heuristic's vote parses again where the tree is None or lxml will not prune it, instead of decoding the
    page a second time. `dates`: the metadata's publication date is read (metadata.page_metadata)."""
    text, truncated, decoded = _prepare(html, max_chars)
    if parser in ("auto", "lxml"):
        try:
            tree, parser = parse(text, "lxml"), "lxml"
        except _TooDeep:
            tree, parser = parse(text, "bs4"), "bs4"
    else:
        tree = parse(text, parser)
    blocks = walk_blocks(tree, parser, owners=owners, marks=marks)
    hidden = False  # the blocks hold hidden text: the visible page has no article, a hidden container holds one
    if _contains(text, *_HIDDEN_MARKS) and not visible_article(blocks):
        blocks, hidden = _hidden_view(tree, parser, text, blocks, owners, marks)
    doc = Document(blocks, _title(tree, parser), decoded.encoding, decoded.replaced, truncated, guessed=decoded.guessed,
                   hidden_source=hidden)
    if parser == "lxml":  # read before anyone prunes the tree (the heuristic's vote does); ~0.7 ms a page
        doc.extra[METADATA] = page_metadata(tree, date=dates)
    return doc, (tree if parser == "lxml" else None), decoded.text


def _hidden_view(tree: Any, parser: str, text: str, blocks: list[Block], owners: list[Any] | None, marks: bool
                 ) -> tuple[list[Block], bool]:
    """The blocks of a page whose visible text has no article (hidden.visible_article), with what its hidden
    containers hold where that is more: an app shell walked with its <noscript> content shown (what a browser without
    JavaScript displays), else the article of a <noscript>, <template> or script template (hidden.reveal_hidden).
    Returns (blocks, whether they hold hidden text). The hidden text read is bounded (hidden.limit_hidden)."""
    shown = sum(b.text_len for b in blocks)
    if shown < NOSCRIPT_FALLBACK_CHARS and _contains(text, "<noscript"):
        if parser == "lxml":  # the outermost ones, listed before any is cut
            limit_hidden([el for el in tree.iter("noscript") if next(el.iterancestors("noscript"), None) is None])
        noscript_owners: list[Any] | None = [] if owners is not None else None
        with_noscript = walk_blocks(tree, parser, noscript=True, owners=noscript_owners, marks=marks)
        if sum(b.text_len for b in with_noscript) > 2 * shown + 100:  # an app shell with a no-JS view
            if owners is not None and noscript_owners is not None:
                owners[:] = noscript_owners
            return with_noscript, True
    if parser == "lxml" and reveal_hidden(tree, blocks):  # the article in <noscript> or a template
        if owners is not None:
            owners.clear()
        return walk_blocks(tree, parser, owners=owners, marks=marks), True
    return blocks, False


def block_record(block: Block) -> dict[str, Any]:
    """A JSON-ready dict of one block (what `bodyblocks segment` prints)."""
    rec = asdict(block)
    rec["is_heading"] = block.is_heading
    return rec


def print_segmentation(path: str | Path, fmt: str = "jsonl", out: TextIO = sys.stdout, parser: str = "auto",
                       judge: Callable[[bytes], Extraction] | None = None, data: bytes | None = None) -> int:
    """Segment one page file and print its blocks; returns a process exit status.

    `fmt` "table": a header line and a column header row, then a line per block; with `judge` (an extractor's
    extract, e.g. the shipped default's) the P(body) it gives each block and whether it kept it ("body", or
    "title" for the headline's block), else "-" in both columns. `data`: the page's bytes, read already (standard
    input); `path` then only names it."""
    try:
        data = read_bytes(path) if data is None else data
        doc = segment(data, parser=parser)
        judged = judge(data) if judge is not None and fmt == "table" else None
    except (InputError, OSError) as exc:
        print(f"bodyblocks: {path}: {exc}", file=sys.stderr)
        return 2
    if fmt == "jsonl":
        for b in doc.blocks:
            out.write(json.dumps(block_record(b), ensure_ascii=False) + "\n")
        return 0
    probs: list[float | None] = [None] * len(doc.blocks)
    kept: dict[int, str] = {}
    if judged is not None and judged.probabilities is not None and len(judged.probabilities) == len(doc.blocks):
        probs = list(judged.probabilities)
        kept = {i: "body" for i in judged.kept or []}
        if judged.headline is not None:
            kept[judged.headline] = "title"
    by = f"  P(body): {judged.extractor}" if judged is not None else "  P(body): not judged"
    out.write(f"# title: {doc.title}  encoding: {doc.encoding}  blocks: {len(doc.blocks)}{by}\n")
    out.write(f"{'#':>4s} {'link':>4s} {'P(body)':>7s} {'kept':<5s} {'tag path':>50s}  text\n")
    for b, p in zip(doc.blocks, probs, strict=True):
        snippet = b.text.replace("\n", " ⏎ ")[:70]
        shown = "-" if p is None else f"{p:.2f}"
        mark = kept.get(b.index, "" if p is not None else "-")
        out.write(f"{b.index:4d} {b.link_density:4.2f} {shown:>7s} {mark:<5s} {b.tag_path[-50:]:>50s}  {snippet}\n")
    return 0
