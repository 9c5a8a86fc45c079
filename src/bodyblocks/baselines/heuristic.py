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
    NodeStats,
    block_lines,
    body_of,
    class_id,
    drop_tags,
    drop_with_stats,
    node_stats,
    page_title,
    parse,
    tag_of,
    text_blocks,
)
from bodyblocks.baselines.rules import count_chars
from bodyblocks.htmltags import BASELINE_INVISIBLE_TAGS, HEADING_TAGS
from bodyblocks.types import Extraction


def holds_body(s: NodeStats | None, page_chars: int) -> bool:
    """The exception of steps 3-4: >= 3 paragraphs and > 35 % of the page's text."""
    return s is not None and s.paragraphs >= R.KEEP_PARAGRAPHS and s.chars > R.KEEP_TEXT_SHARE * page_chars


def prune(body: etree._Element, doomed: Callable[[etree._Element], bool], stats: dict[etree._Element, NodeStats],
          candidates: Iterable[etree._Element], punct: bool) -> None:
    """Drop the elements `doomed` names among `candidates` (document order), except containers that hold
    the body; `stats` (node_stats of body, with the same `punct`) is kept up to date."""
    page_chars = max(1, stats[body].chars)
    drop_with_stats([el for el in candidates if el is not body and doomed(el)
                     and not holds_body(stats.get(el), page_chars)], stats, punct)


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


def direct_score(el: etree._Element, stats: dict[etree._Element, NodeStats]) -> float:
    """Step 5: score of a container's own text and its non-container children (paragraphs, lists...)."""
    chars, links, paragraphs = count_chars(el.text or ""), 0, 0
    for child in el:
        chars += count_chars(child.tail or "")
        s = stats.get(child)
        if s is None or tag_of(child) in R.CONTAINER_TAGS:
            continue
        chars, links = chars + s.chars, links + s.link_chars
        paragraphs += tag_of(child) in R.PARAGRAPH_TAGS and s.chars > 0
    return weighted_score(chars, links, paragraphs, el)


def subtree_score(el: etree._Element, s: NodeStats) -> float:
    """Step 6: the same formula over the element's whole subtree."""
    return weighted_score(s.chars, s.link_chars, s.paragraphs, el)


def best_candidate(body: etree._Element, stats: dict[etree._Element, NodeStats]) -> etree._Element | None:
    """Step 5: the container with the best direct score, if any has text."""
    candidates = [el for el in stats if tag_of(el) in R.CONTAINER_TAGS and stats[el].chars > 0]
    if not candidates:
        return None
    return max(candidates, key=lambda el: direct_score(el, stats))


def promote(el: etree._Element, body: etree._Element, stats: dict[etree._Element, NodeStats]) -> etree._Element:
    """Step 6: climb to the ancestor (up to body) whose subtree score beats the current one by PROMOTE_GAIN."""
    best, best_score = el, subtree_score(el, stats[el])
    node = el
    while node is not body and node.getparent() is not None:
        node = node.getparent()
        score = subtree_score(node, stats[node])
        if score >= R.PROMOTE_GAIN * best_score:
            best, best_score = node, score
    return best


def filter_lines(el: etree._Element) -> list[str]:
    """Step 7: keep heading lines of >= 2 characters and other lines of >= 10."""
    kept: list[str] = []
    for tag, text in text_blocks(el):
        minimum = R.MIN_HEADING_CHARS if tag in HEADING_TAGS else R.MIN_LINE_CHARS
        kept.extend(line for line in block_lines(text) if count_chars(line) >= minimum)
    return kept


class HeuristicExtractor:
    """The eight-step pruning pipeline (see the module docstring)."""

    name = "heuristic"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Body lines of the promoted best container; title as its own channel."""
        root, decoded = parse(html)  # 1. decode, 2. parse with recovery
        title = page_title(root)  # 8. read before steps 3-4 remove <head> and <header>
        text = body_text(root)
        return Extraction(text, title, self.name, decoded.encoding, no_body=not text, replaced=decoded.replaced)


def pruned_body(root: etree._Element, punct: bool = False) -> tuple[etree._Element, dict[etree._Element, NodeStats]]:
    """Steps 3-4 on a parsed page, in place: the body element and the node_stats of what is left (with
    punctuation counted only when `punct`: step 5 scores none)."""
    drop_tags(root, BASELINE_INVISIBLE_TAGS)  # 3. invisible elements and comments, then boilerplate tags
    body = body_of(root)
    stats = node_stats(body, punct)
    prune(body, is_boilerplate_tag, stats, body.iter(*R.BOILERPLATE_TAGS), punct)
    prune(body, has_negative_hint, stats, body.xpath(".//*[@class or @id]"), punct)  # 4.
    return body, stats


def body_text(root: etree._Element) -> str:
    """Steps 3-7 on a parsed page (the tree is pruned in place): the body lines, "" when there is none."""
    body, stats = pruned_body(root)
    best = best_candidate(body, stats)  # 5.
    return "\n".join(filter_lines(promote(best, body, stats)) if best is not None else [])  # 6., 7.


def heuristic_text(html: str | bytes) -> str:
    """The heuristic's body text of a page, without its title (the ensemble's vote)."""
    return body_text(parse(html)[0])
