"""The heuristic's body of a page, steps 2-7 of its pipeline (heuristic.py), with the lxml helpers they use
(dom.py imports those the other baselines share), so a page's tree goes through one module:

    root = parse_text(text)                  # 2. decoded HTML -> an lxml root (libxml2's recovering parser)
    answer = body_text(root)                 # 3.-7. pruned in place, the best container's lines
    answer = vote_text(tree, text)           # the vote's: the segmenter's tree pruned, else `text` parsed again

Every walk is iterative (pages nest 10,000 deep), and all text counts exclude white space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import lxml.html
from lxml import etree

from bodyblocks.baselines import rules as R
from bodyblocks.errors import EmptyInput, InputError
from bodyblocks.page.htmltags import BASELINE_BLOCK_TAGS, BASELINE_INVISIBLE_TAGS, HEADING_TAGS

HtmlElement = etree._Element  # lxml.html elements, or plain ones from the capped re-parse
MAX_DEPTH = 1024  # the capped re-parse flattens deeper elements (libxml2 stops building trees at 2048)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # control characters libxml2 refuses
HTML_PARSER = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
S = TypeVar("S")


def parse_text(text: str) -> HtmlElement:
    """Step 2: decoded HTML parsed with libxml2's recovering HTML parser (re-parsed capped at MAX_DEPTH when it
    nests past libxml2's limit); raise EmptyInput for no content."""
    text = CONTROL.sub("", _XML_DECL.sub("", text, count=1))
    if not text.strip():
        raise EmptyInput("page holds no markup or text")
    try:
        root = lxml.html.document_fromstring(text, parser=HTML_PARSER)
        if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in HTML_PARSER.error_log):
            root = _parse_capped(text)  # too deep: libxml2 dropped everything past the limit
    except (etree.ParserError, ValueError) as exc:
        raise EmptyInput(f"nothing to parse ({exc})") from exc
    if root is None:
        raise EmptyInput("nothing to parse")
    return root


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


def tag_of(el: etree._Element) -> str:
    """Lower-case tag name; "" for comments and processing instructions."""
    return el.tag.lower() if isinstance(el.tag, str) else ""


def class_id(el: etree._Element) -> str:
    """The element's class and id attributes joined by a space."""
    return f"{el.get('class') or ''} {el.get('id') or ''}".strip()


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


def body_of(root: HtmlElement) -> HtmlElement:
    """The <body> element, or the root when there is none."""
    body = root.find("body")
    return body if body is not None else root


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


def block_lines(text: str) -> list[str]:
    """Non-empty, white-space-normalised lines of one block's text: clean_line of each line (str.split's
    white space is the regex \\s, so a line's words joined by single spaces are its clean_line)."""
    return [c for c in (" ".join(x.split()) for x in text.split("\n")) if c]


# Counts: the heuristic's statistics of one element's subtree, a tuple indexed by these positions (text
# counts exclude white space).
CHARS, LINK_CHARS, PARAGRAPHS, KIND = range(4)
Counts = tuple[int, int, int, int]
LINK, PARAGRAPH, CONTAINER = 1, 2, 3  # KIND: <a>, a PARAGRAPH_TAGS element, a CONTAINER_TAGS element; else 0
_KINDS = {"a": LINK, **dict.fromkeys(R.PARAGRAPH_TAGS, PARAGRAPH), **dict.fromkeys(R.CONTAINER_TAGS, CONTAINER)}


def element_counts(el: etree._Element, counts: dict[etree._Element, Counts]) -> Counts:
    """An element's Counts from its own text, its children's tails and its children's Counts."""
    text = el.text
    chars = sum(map(len, text.split())) if text else 0  # count_chars
    link_chars = paragraphs = 0
    if len(el):
        get = counts.get
        for child in el:
            tail = child.tail
            if tail and not tail.isspace():
                chars += sum(map(len, tail.split()))
            c = get(child)  # None for a comment, processing instruction or entity
            if c is not None:
                chars += c[CHARS]
                link_chars += c[LINK_CHARS]
                paragraphs += c[PARAGRAPHS]
    kind = _KINDS.get(el.tag.lower(), 0)
    if kind == LINK:
        link_chars = chars
    elif kind == PARAGRAPH and chars:
        paragraphs += 1
    return chars, link_chars, paragraphs, kind


def subtree_counts(root: etree._Element) -> dict[etree._Element, Counts]:
    """Counts of every element under (and including) root, computed bottom-up in one pass (children first)."""
    return tally(root)[0]


# tally's code of a tag (exact spelling): a KIND, BOILERPLATE (kind 0, a step-3 tag: iter(*BOILERPLATE_TAGS)
# names them exactly), or NOT_ELEMENT (comment, processing instruction, entity)
BOILERPLATE, NOT_ELEMENT = 4, -1
_CODES: dict[object, int] = {etree.Comment: NOT_ELEMENT, etree.ProcessingInstruction: NOT_ELEMENT,
                             etree.Entity: NOT_ELEMENT}


def _code(tag: str) -> int:
    """tally's code of a tag name, memoised (a page's tags are few; the memo stops growing at 4,096 names)."""
    code = BOILERPLATE if tag in R.BOILERPLATE_TAGS else _KINDS.get(tag.lower(), 0)
    if len(_CODES) < 4096:
        _CODES[tag] = code
    return code


def tally(root: etree._Element) -> tuple[dict[etree._Element, Counts], list[etree._Element]]:
    """(subtree Counts of every element under and including root, the step-3 boilerplate elements in
    document order, root left out).

    One pass over the nodes in reverse document order (every node comes after its descendants): an
    element's Counts are its own text's plus what its children handed it, and it hands its parent its
    Counts plus its tail's characters. A comment, processing instruction or entity hands on its tail only.
    The dict's order is that pass's (children before parents), which drop_with_stats relies on.
    """
    counts: dict[etree._Element, Counts] = {}
    handed: dict[etree._Element, list[int]] = {}  # parent -> [chars, link chars, paragraphs] of its children
    boilerplate: list[etree._Element] = []
    codes, pop, get = _CODES, handed.pop, handed.get
    nodes = list(root.iter())
    for el in reversed(nodes):
        tag = el.tag
        code = codes.get(tag)
        if code is None:
            code = _code(tag)
        if code == NOT_ELEMENT:
            chars = links = paragraphs = 0
        else:
            text = el.text
            h = pop(el, None)
            if h is None:
                chars = sum(map(len, text.split())) if text else 0
                links = paragraphs = 0
            else:
                chars, links, paragraphs = h
                if text:
                    chars += sum(map(len, text.split()))
            if code:
                if code == LINK:
                    links = chars
                elif code == PARAGRAPH:
                    if chars:
                        paragraphs += 1
                elif code == BOILERPLATE:
                    boilerplate.append(el)
                    code = 0
            counts[el] = (chars, links, paragraphs, code)
            if el is root:
                break
        tail = el.tail
        if tail and not tail.isspace():
            chars += sum(map(len, tail.split()))
        parent = el.getparent()
        h = get(parent)
        if h is None:
            handed[parent] = [chars, links, paragraphs]
        else:
            h[0] += chars
            h[1] += links
            h[2] += paragraphs
    boilerplate.reverse()
    return counts, boilerplate


def holds_body(c: Counts, page_chars: int) -> bool:
    """The exception of steps 3-4: >= 3 paragraphs and > 35 % of the page's text."""
    return c[PARAGRAPHS] >= R.KEEP_PARAGRAPHS and c[CHARS] > R.KEEP_TEXT_SHARE * page_chars


def prune(body: etree._Element, doomed: Callable[[etree._Element], bool], counts: dict[etree._Element, Counts],
          candidates: Iterable[etree._Element]) -> None:
    """Drop the elements `doomed` names among `candidates` (document order), except containers that hold
    the body; `counts` (subtree_counts of body) is kept up to date.

    The candidates are tested as they are dropped: one no longer in `counts` (gone with an ancestor dropped
    before it) is skipped untested, and the others' counts are still those of the unpruned tree, because
    drop_with_stats recomputes the ancestors once the last candidate is through.
    """
    page_chars = max(1, counts[body][CHARS])
    drop_with_stats((el for el in candidates if el in counts and el is not body and doomed(el)
                     and not holds_body(counts[el], page_chars)),
                    counts, lambda node: element_counts(node, counts))


def is_boilerplate_tag(el: etree._Element) -> bool:
    """Step 3: form, nav, aside, footer, header."""
    return tag_of(el) in R.BOILERPLATE_TAGS


def has_negative_hint(el: etree._Element) -> bool:
    """Step 4: class or id hits the negative word list."""
    hint = class_id(el)
    return bool(hint) and R.is_negative(hint)


def weighted_score(chars: int, link_chars: int, paragraphs: int, el: etree._Element) -> float:
    """chars * (1 - 1.6 * link density) + 55 * min(paragraphs, 12) + positive bonus."""
    density = link_chars / chars if chars else 0.0
    score = chars * (1 - R.LINK_PENALTY * density) + R.PARAGRAPH_BONUS * min(paragraphs, R.PARAGRAPH_CAP)
    hint = class_id(el)
    return score + (R.POSITIVE_BONUS if hint and R.is_positive(hint) else 0.0)


def direct_score(el: etree._Element, counts: dict[etree._Element, Counts]) -> float:
    """Step 5: score of a container's own text and its non-container children (paragraphs, lists...): its
    subtree's counts less those of its container children."""
    chars, links, _, _ = counts[el]
    paragraphs = 0
    for child in el:
        c = counts.get(child)
        if c is None:
            continue
        if c[KIND] == CONTAINER:
            chars -= c[CHARS]
            links -= c[LINK_CHARS]
        elif c[KIND] == PARAGRAPH and c[CHARS]:
            paragraphs += 1
    return weighted_score(chars, links, paragraphs, el)


def subtree_score(el: etree._Element, c: Counts) -> float:
    """Step 6: the same formula over the element's whole subtree."""
    return weighted_score(c[CHARS], c[LINK_CHARS], c[PARAGRAPHS], el)


def best_candidate(body: etree._Element, counts: dict[etree._Element, Counts]) -> etree._Element | None:
    """Step 5: the container with the best direct score, if any has text (the first in post-order on a tie)."""
    best: list[etree._Element] = []
    top = 0.0
    for el, c in counts.items():
        if c[KIND] == CONTAINER and c[CHARS] > 0:
            score = direct_score(el, counts)
            if not best or score > top:
                best, top = [el], score
            elif score == top:
                best.append(el)
    if len(best) < 2:
        return best[0] if best else None
    tied = set(best)  # counts runs children first but not in post-order: find the first of them in post-order
    return next(el for _, el in etree.iterwalk(body, events=("end",)) if el in tied)


def promote(el: etree._Element, body: etree._Element, counts: dict[etree._Element, Counts]) -> etree._Element:
    """Step 6: climb to the ancestor (up to body) whose subtree score beats the current one by PROMOTE_GAIN."""
    best, best_score = el, subtree_score(el, counts[el])
    node = el
    while node is not body and node.getparent() is not None:
        node = node.getparent()
        score = subtree_score(node, counts[node])
        if score >= R.PROMOTE_GAIN * best_score:
            best, best_score = node, score
    return best


def filter_lines(el: etree._Element) -> list[str]:
    """Step 7: keep heading lines of >= 2 characters and other lines of >= 10."""
    kept: list[str] = []
    for tag, text in text_blocks(el):
        minimum = R.MIN_HEADING_CHARS if tag in HEADING_TAGS else R.MIN_LINE_CHARS
        # a line of block_lines holds no white space but single spaces: its count_chars is len - spaces
        kept.extend(line for line in block_lines(text) if len(line) - line.count(" ") >= minimum)
    return kept


_CLASS_OR_ID = etree.XPath("descendant::*[@class or @id]")


def pruned_body(root: etree._Element) -> tuple[etree._Element, dict[etree._Element, Counts]]:
    """Steps 3-4 on a parsed page, in place: the body element and the subtree_counts of what is left."""
    drop_tags(root, BASELINE_INVISIBLE_TAGS)  # 3. invisible elements and comments, then boilerplate tags
    body = body_of(root)
    counts, boilerplate = tally(body)
    prune(body, is_boilerplate_tag, counts, boilerplate)
    prune(body, has_negative_hint, counts, _CLASS_OR_ID(body))  # 4.
    return body, counts


def body_text(root: etree._Element) -> str:
    """Steps 3-7 on a parsed page (the tree is pruned in place): the body lines, "" when there is none."""
    body, counts = pruned_body(root)
    best = best_candidate(body, counts)  # 5.
    return "\n".join(filter_lines(promote(best, body, counts)) if best is not None else [])  # 6., 7.


def vote_text(tree: Any, text: str | Callable[[], str]) -> str:
    """The heuristic's body text of a page for the vote, without its title: `tree` (the lxml root the segmenter
    parsed, segment.segment_tree's; None: none) pruned in place, else the page's decoded `text` (or a function
    returning it, called only then) parsed again; "" when that holds nothing to parse."""
    if tree is not None:
        try:
            return body_text(tree)
        except ValueError:  # lxml will not move text holding a control character that the segmenter's
            pass  # parse kept; parse_text strips them
    try:
        return body_text(parse_text(text() if callable(text) else text))
    except InputError:  # e.g. markup that libxml2 makes nothing of: the heuristic has no answer
        return ""
