"""The one path of a page through segmentation, whoever extracts it: the API (BlockExtractor.extract), the batch
runner's and the Ray pipeline's workers (BlockExtractor.page_segmenter) and training's vote on cached pages
(vote_on_blocks) all segment and annotate a page here, in this order:

  1. segment.segment_parsed: decode (decode.to_text, once), parse, walk into blocks; the title and metadata;
  2. roles.add_descriptions: the page's meta descriptions, the standfirst's cue;
  3. prominence.add_prominent: on a page with no title channel, the blocks the tree shows as prominent;
  4. kinds.add_kind: structured data naming a forum or Q&A thread;
  5. vote.vote_on_tree, when voting: the heuristic prunes the same tree (or parses the decoded text again where it
     cannot), and each block in its answer gets 1.

    doc = segment_page(html, voting=True)            # steps 1-5
    page = segment_annotated(html)                   # steps 1-4, the tree and the decoded text kept for step 5
    vote_on_tree(page.doc, page.tree, page.text)     # step 5 apart (BlockExtractor.extract: beside the forward pass)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from bodyblocks.extraction import kinds, roles
from bodyblocks.extraction.prominence import add_prominent
from bodyblocks.extraction.vote import VOTE, vote_on_tree
from bodyblocks.page.segment import segment_parsed
from bodyblocks.types import Document


class Segmented(NamedTuple):
    """A page after steps 1-4: its Document, the lxml root it was walked from (None where BeautifulSoup parsed it)
    and its decoded text, what step 5 needs."""

    doc: Document
    tree: Any
    text: str


def segment_annotated(html: str | bytes, *, marks: bool = False, dates: bool = True) -> Segmented:
    """Steps 1-4 of the page path. `marks`: the blocks note their links and emphasis (Block.marks); `dates`: the
    page's publication date is read (metadata.page_metadata)."""
    doc, tree, text = segment_parsed(html, marks=marks, dates=dates)
    roles.add_descriptions(doc, tree)
    add_prominent(doc, tree)
    kinds.add_kind(doc, tree)
    return Segmented(doc, tree, text)


def segment_page(html: str | bytes, *, voting: bool = False, marks: bool = False, dates: bool = True) -> Document:
    """A block extractor's page segmenter: steps 1-4, and step 5 (the heuristic's vote) when `voting`."""
    page = segment_annotated(html, marks=marks, dates=dates)
    return vote_on_tree(page.doc, page.tree, page.text) if voting else page.doc


def vote_on_blocks(key: str, texts: Sequence[str], html: bytes | str) -> np.ndarray:
    """The vote on a cached page's blocks (their `texts`), made as segment_page makes it for a page being
    extracted (tuning, fine-tuning); `key` names the page in the error raised when the cached blocks are not the
    segmenter's."""
    doc = segment_page(html, voting=True)
    if [b.text for b in doc.blocks] != list(texts):
        raise ValueError(f"{key}: the cache's blocks are not the segmenter's (rebuild the cache)")
    return doc.extra[VOTE]
