"""The heuristic's vote: 1 for a block whose text is in the `heuristic` extractor's answer, else 0.

    add_vote(doc, html, tree)                  # the vote in doc.extra[VOTE], on the tree the segmenter parsed
    vote_on_blocks(key, texts, html)           # the vote on a cached page's blocks (tuning, fine-tuning)

The `heuristic` extractor (baselines/heuristic.py) picks the one container with the most text and
paragraphs and the fewest links, which is right on kinds of page the learners saw few of (product grids,
documentation). It prunes the tree the segmenter parsed (segment.segment_tree) instead of parsing the page
a second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bodyblocks.baselines.heuristic import body_text, heuristic_text
from bodyblocks.errors import InputError
from bodyblocks.page.segment import segment_tree
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


def add_vote(doc: Document, html: str | bytes, tree: Any = None) -> Document:
    """Store the heuristic's vote on the page's blocks in doc.extra (a page it finds no body in: all 0).

    `tree`: the lxml root the segmenter parsed the page into (segment_tree), which the heuristic then
    prunes instead of decoding and parsing the page a second time; None: it parses `html` itself.
    """
    answer = None
    if tree is not None:
        try:
            answer = body_text(tree)
        except ValueError:  # lxml will not move text holding a control character that the segmenter's
            pass  # parse kept; the heuristic's own parse strips them
    if answer is None:
        try:
            answer = heuristic_text(html)
        except InputError:  # e.g. markup that libxml2 makes nothing of: the heuristic has no answer
            answer = ""
    doc.extra[VOTE] = heuristic_vote(doc.blocks, answer)
    return doc


def segment_with_vote(html: str | bytes, marks: bool = False) -> Document:
    """segment.segment, plus the heuristic's vote on the same parsed tree (vote_on_blocks' segmenter; an
    extractor's pages go through blocks.segment_page, which calls add_vote). `marks`: as segment's."""
    doc, tree = segment_tree(html, marks=marks)
    return add_vote(doc, html, tree)


def vote_on_blocks(key: str, texts: Sequence[str], html: bytes | str) -> np.ndarray:
    """The vote on a cached page's blocks (their `texts`), made as segment_with_vote makes it for a page being
    extracted; `key` names the page in the error raised when the cached blocks are not the segmenter's."""
    doc = segment_with_vote(html)
    if [b.text for b in doc.blocks] != list(texts):
        raise ValueError(f"{key}: the cache's blocks are not the segmenter's (rebuild the cache)")
    return doc.extra[VOTE]
