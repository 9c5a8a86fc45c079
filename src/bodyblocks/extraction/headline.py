"""The page's headline, for the decision rule (decision.py): the block that matches its title channel, else one the
page shows as its headline, and the title it then gets.

    head = title_match(blocks, doc.title, keep)          # step 4: a block that matches the title channel
    head = headline_block(blocks, doc.title, keep, doc.extra.get(PROMINENT, ()))   # step 6: the page's headline
    title = page_title(blocks, head, doc.title)          # step 6: the headline's text, else the title channel
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from bodyblocks.extraction.prominence import shown_headline
from bodyblocks.types import Block

HEADLINE_SIMILARITY = 85.0  # rapidfuzz's ratio (0-100) of a block's text to the title or one of its parts
MAX_TITLE = 500  # characters of the title compared (a title can be any length)
# where a title is cut into headline and site name ("headline_site", "headline | site", "headline-site")
_TITLE_PARTS = re.compile(r"\s*[_|｜–—-]\s*|\s+[:：]\s+")
_SPACE = re.compile(r"\s+")
# where a title's site name is cut off (a hyphen only with spaces around it: "Jean-Luc" is one word)
_SITE_SEPARATOR = re.compile(r"(\s+[|｜–—»:-]\s+|\s*[_｜|]\s*|\s+::\s+)")


def title_match(blocks: Sequence[Block], title: str, keep: np.ndarray) -> int | None:
    """Step 4 (and 6): the index of the block that is the page's headline, or None. A block is a candidate when its
    text (white space removed) has a rapidfuzz ratio of at least HEADLINE_SIMILARITY to the title or to its
    longest part cut at a separator (a site's name is the shorter part) and at most half of it is link text (a
    logo, a breadcrumb's link); of the candidates, the best match, then the one nearest the first kept block."""
    from rapidfuzz import fuzz

    title = title[:MAX_TITLE]
    flat = _SPACE.sub("", title)
    if not flat:
        return None
    parts = {flat, max((_SPACE.sub("", y) for y in _TITLE_PARTS.split(title)), key=len)}  # not the site's name
    # a ratio of HEADLINE_SIMILARITY needs lengths within a factor r / (200 - r) of each other
    factor = HEADLINE_SIMILARITY / (200.0 - HEADLINE_SIMILARITY)
    low, high = max(2.0, factor * min(map(len, parts))), max(map(len, parts)) / factor
    first = int(np.argmax(keep)) if keep.any() else 0
    best: tuple[float, int, int] | None = None
    for i, block in enumerate(blocks):
        if not low <= block.text_len <= high or block.link_density > 0.5:  # a logo or a link to the page
            continue
        text = _SPACE.sub("", block.text)
        score = max(fuzz.ratio(text, part, score_cutoff=HEADLINE_SIMILARITY) for part in parts)
        if score >= HEADLINE_SIMILARITY and (best is None or (score, -abs(i - first)) > best[:2]):
            best = (score, -abs(i - first), i)
    return None if best is None else best[2]


def headline_block(blocks: Sequence[Block], title: str, keep: np.ndarray, prominent: Sequence[int] = ()
                   ) -> int | None:
    """The page's headline: the block that matches the title channel (title_match), else a kept <h1> that is the
    first kept block or sits just before it; on a page with no title channel, a short prominent block at the top
    of the body (prominence.shown_headline; `prominent`: its tree's cue); None when the page shows none."""
    head = title_match(blocks, title, keep) if title else None
    if head is not None or not keep.any():
        return head
    if not title:
        return shown_headline(blocks, keep, prominent)
    first = int(np.argmax(keep))
    for i in (first, first - 1):
        if i >= 0 and blocks[i].heading_level == 1 and blocks[i].link_density <= 0.5 and blocks[i].text_len >= 2:
            return i
    return None


def site_free_title(title: str) -> str:
    """The title channel without the site's name: of a title cut at a separator (" | ", " - ", "_", ...), the
    first or last part is left out when it is the shorter side (a site's name); otherwise the title as it is."""
    parts = _SITE_SEPARATOR.split(title)
    if len(parts) < 3:
        return title.strip()
    texts = parts[0::2]
    last, first = texts[-1], texts[0]
    if len(last.strip()) < len("".join(parts[:-2]).strip()):
        return "".join(parts[:-2]).strip()
    if len(first.strip()) < len("".join(parts[2:]).strip()):
        return "".join(parts[2:]).strip()
    return title.strip()


def page_title(blocks: Sequence[Block], head: int | None, title: str) -> str:
    """The page's title: the headline's text (white space made single spaces), else the title channel less its
    site's name (site_free_title)."""
    return _SPACE.sub(" ", blocks[head].text).strip() if head is not None else site_free_title(title)
