"""`scorer`: a multi-feature candidate scorer that says "no body" instead of guessing.

Every container (div, article, section, main, td, body...) holding SCORER_MIN_CHARS characters is scored
over its whole subtree:
  punctuation + 25 * paragraphs - 1.5 * link density * length, -1000 for a negative class/id hint,
  +200 for a positive one.
The best candidate's text is the body; when its score is below SCORER_MIN_SCORE the page has no body
(a listing, a login form, an error page), and the extraction is empty with no_body=True.
"""

from __future__ import annotations

from lxml import etree

from bodyblocks.baselines import rules as R
from bodyblocks.baselines.dom import NodeStats, node_stats, page_title, parse, text_lines
from bodyblocks.baselines.pruning import body_of, class_id, drop_tags, tag_of
from bodyblocks.page.htmltags import BASELINE_INVISIBLE_TAGS
from bodyblocks.types import Extraction


def candidate_score(el: etree._Element, s: NodeStats) -> float:
    """punctuation + 25 x paragraphs - 1.5 x link density x length, plus class/id hints."""
    score = s.punct + R.SCORER_PARAGRAPH * s.paragraphs - R.SCORER_LINK * s.link_density * s.chars
    hint = class_id(el)
    if hint and R.is_negative(hint):
        score += R.SCORER_NEGATIVE
    elif hint and R.is_positive(hint):
        score += R.SCORER_POSITIVE
    return score


def best_scored(body: etree._Element) -> tuple[etree._Element | None, float]:
    """The best-scoring container and its score (None, -inf when there is none)."""
    stats = node_stats(body)
    best, best_score = None, float("-inf")
    for el, s in stats.items():
        if tag_of(el) not in R.CONTAINER_TAGS or s.chars < R.SCORER_MIN_CHARS:
            continue
        score = candidate_score(el, s)
        if score > best_score:
            best, best_score = el, score
    return best, best_score


class ScorerExtractor:
    """Best container by the multi-feature score; no body below the minimum score."""

    name = "scorer"

    def __init__(self, min_score: float = R.SCORER_MIN_SCORE) -> None:
        self.min_score = min_score

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """The best container's lines, or an empty no-body extraction when nothing scores high enough."""
        root, decoded = parse(html)
        title = page_title(root)
        drop_tags(root, BASELINE_INVISIBLE_TAGS)
        best, score = best_scored(body_of(root))
        text = "\n".join(text_lines(best)) if best is not None and score >= self.min_score else ""
        confidence = max(0.0, min(1.0, score / (2 * self.min_score))) if best is not None else 0.0
        return Extraction(
            text, title, self.name, decoded.encoding, confidence=confidence, no_body=not text,
            replaced=decoded.replaced,
        )
