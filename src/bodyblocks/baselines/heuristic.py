"""`heuristic`: the eight-step pruning pipeline.

  1. decode the bytes (decode.py: BOM, declared charsets tried strictly, UTF-8, GB18030, cp1252);
  2. parse with libxml2's recovering HTML parser;
  3. drop script/style/noscript/iframe/svg and comments, then form/nav/aside/footer/header;
  4. prune containers whose class or id hits a negative word;
     steps 3 (form...header) and 4 never prune a container holding >= 3 paragraphs and > 35 % of the
     page's text: a missing </div> can pull the body into class="header", ASP.NET wraps pages in <form>;
  5. score candidate containers on their direct content:
     chars * (1 - 1.6 * link density) + 55 * min(paragraphs, 12) + a positive-class bonus;
  6. promote the best candidate to the ancestor that holds the rest of the body: climb while an
     ancestor's whole-subtree score beats the current one's by PROMOTE_GAIN;
  7. filter the chosen element's lines: headings need 2 characters, other lines 10;
  8. keep the title (og:title, <h1>, <title>) as its own channel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lxml import etree

from bodyblocks.baselines import rules as R
from bodyblocks.baselines.dom import (
    block_lines,
    body_of,
    class_id,
    drop_tags,
    drop_with_stats,
    page_title,
    parse,
    tag_of,
    text_blocks,
)
from bodyblocks.page.htmltags import BASELINE_INVISIBLE_TAGS, HEADING_TAGS
from bodyblocks.types import Extraction

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


class HeuristicExtractor:
    """The eight-step pruning pipeline (see the module docstring)."""

    name = "heuristic"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Body lines of the promoted best container; title as its own channel."""
        root, decoded = parse(html)  # 1. decode, 2. parse with recovery
        title = page_title(root)  # 8. read before steps 3-4 remove <head> and <header>
        text = body_text(root)
        return Extraction(text, title, self.name, decoded.encoding, no_body=not text, replaced=decoded.replaced,
                          guessed=decoded.guessed)


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


def heuristic_text(html: str | bytes) -> str:
    """The heuristic's body text of a page, without its title (the ensemble's vote)."""
    return body_text(parse(html)[0])
