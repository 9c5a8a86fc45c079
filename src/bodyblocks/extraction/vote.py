"""The heuristic's vote: 1 for a block whose text is in the `heuristic` extractor's answer, else 0.

    vote_on_tree(doc, tree, text)              # the vote in doc.extra[VOTE], on the tree the segmenter parsed
    add_vote(doc, html)                        # the same on a page segmented without it, from its HTML

The `heuristic` extractor (baselines/heuristic.py) picks the one container with the most text and
paragraphs and the fewest links, which is right on kinds of page the learners saw few of (product grids,
documentation). It prunes the tree the segmenter parsed (segment.segment_parsed) instead of parsing the page
a second time. A page reaches the vote through the one page path, segmenting.segment_page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bodyblocks.baselines.pruning import vote_text
from bodyblocks.page.decode import to_text
from bodyblocks.types import Block, Document

VOTE = "heuristic"  # the vote's key in Document.extra
VOTE_SEARCH_LIMIT = 200_000_000  # blocks x answer characters searched at most; past it, whole lines only


def heuristic_vote(blocks: Sequence[Block], answer: str) -> np.ndarray:
    """Per block, 1.0 when its text (white space removed) occurs in the heuristic's answer, else 0.0.

    Substrings, not whole lines: the heuristic drops lines under 10 characters and our blocks need not
    break where its lines do, so a price or a short heading inside its container still counts. A page
    whose blocks x answer characters exceed VOTE_SEARCH_LIMIT is matched by whole lines only (bounded time).
    """
    flat = "".join(answer.split())  # str.split's white space is the regex \s
    if not flat:
        return np.zeros(len(blocks), np.float32)
    texts = ["".join(b.text.split()) for b in blocks]
    if len(blocks) * len(flat) <= VOTE_SEARCH_LIMIT:
        hits = [bool(t) and t in flat for t in texts]
    else:
        lines = {"".join(x.split()) for x in answer.splitlines()}
        hits = [bool(t) and t in lines for t in texts]
    return np.array(hits, np.float32)


def vote_on_tree(doc: Document, tree: Any, text: str | Callable[[], str]) -> Document:
    """Store the heuristic's vote on the page's blocks in doc.extra (a page it finds no body in: all 0): the page
    path's last step (segmenting.segment_page).

    `tree`: the lxml root the segmenter parsed the page into (segment.segment_parsed), which the heuristic prunes
    instead of parsing the page a second time; `text`: the page's decoded text (or a function returning it), which
    the heuristic parses where the tree is None or lxml will not prune it (pruning.vote_text).
    """
    doc.extra[VOTE] = heuristic_vote(doc.blocks, vote_text(tree, text))
    return doc


def add_vote(doc: Document, html: str | bytes, tree: Any = None) -> Document:
    """vote_on_tree for a page segmented without the vote, from its HTML as given (benchmarks/vote_speed's entry,
    as every revision names it): decoded, as the segmenter decodes it, only where the heuristic has to parse it."""
    return vote_on_tree(doc, tree, lambda: to_text(html).text)
