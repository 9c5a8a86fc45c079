"""`density`: a GNE-style extractor, written from the method's description (text and symbol density).

For every element of <body>:
  TD  = (chars - link chars) / max(1, tags - link tags)     text density
  SbD = (chars - link chars) / (punctuation + 1)             symbol density
  SD  = standard deviation of TD over the element's descendants
  score = TD * log(1 + SD) * log10(paragraphs + 2) * log(1 + SbD)
The element with the best score is the body. The published formula uses log(SD) and log(SbD); we take
log(1 + x) so that a value below 1 cannot flip the sign of the product (two negative logs would make a
poor node score high), and max(1, ...) so that a leaf element has a defined TD.
"""

from __future__ import annotations

import math

from lxml import etree

from bodyblocks.baselines.dom import NodeStats, node_stats, page_title, parse, text_lines
from bodyblocks.baselines.pruning import body_of, drop_tags
from bodyblocks.page.htmltags import BASELINE_INVISIBLE_TAGS
from bodyblocks.types import Extraction


def text_density(s: NodeStats) -> float:
    """Non-link characters per non-link tag."""
    return (s.chars - s.link_chars) / max(1, s.tags - s.link_tags)


def symbol_density(s: NodeStats) -> float:
    """Non-link characters per punctuation mark."""
    return (s.chars - s.link_chars) / (s.punct + 1)


def _descendant_spread(stats: dict[etree._Element, NodeStats]) -> dict[etree._Element, float]:
    """Standard deviation of TD over each element's descendants (stats is in post-order)."""
    sums: dict[etree._Element, tuple[float, float, int]] = {}
    spread: dict[etree._Element, float] = {}
    for el in stats:  # post-order: children come before their parent
        total, total_sq, n = 0.0, 0.0, 0
        for child in el:
            if child not in sums:
                continue
            td = text_density(stats[child])
            c_total, c_sq, c_n = sums[child]
            total, total_sq, n = total + td + c_total, total_sq + td * td + c_sq, n + 1 + c_n
        sums[el] = (total, total_sq, n)
        spread[el] = math.sqrt(max(0.0, total_sq / n - (total / n) ** 2)) if n else 0.0
    return spread


def density_scores(body: etree._Element) -> dict[etree._Element, float]:
    """The GNE-style score of every element under (and including) body."""
    stats = node_stats(body)
    spread = _descendant_spread(stats)
    scores: dict[etree._Element, float] = {}
    for el, s in stats.items():
        if s.chars - s.link_chars <= 0:
            continue
        scores[el] = (
            text_density(s) * math.log1p(spread[el]) * math.log10(s.paragraphs + 2) * math.log1p(symbol_density(s))
        )
    return scores


class DensityExtractor:
    """Text and symbol density over the DOM; the single best-scoring element is the body."""

    name = "density"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """The best element's text lines, or no body when the page has no non-link text."""
        root, decoded = parse(html)
        title = page_title(root)
        drop_tags(root, BASELINE_INVISIBLE_TAGS)
        scores = density_scores(body_of(root))
        best = max(scores, key=scores.__getitem__, default=None)
        text = "\n".join(text_lines(best)) if best is not None else ""
        return Extraction(text, title, self.name, decoded.encoding, no_body=not text, replaced=decoded.replaced)
