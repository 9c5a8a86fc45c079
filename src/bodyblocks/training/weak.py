"""Weak block labels from must-contain / must-not-contain snippets (trafilatura-eval has no full gold text).

    weak = weak_labels(cp)                 # cp: a CachedPage with cp.snippets = {"with": [...], "without": [...]}
    weak.labels                            # int8 per block: 1 body, 0 not body, -1 masked (left out of the loss)
    coverage([weak_labels(cp) for cp in pages])   # how many pages and blocks got a label
    weak_tuning_pages(data, ["trafilatura-eval"])  # such pages, their labels the weak ones, for tuning

A block whose text contains a "with" snippet is body; one containing a "without" snippet is not; every other
block is masked, and so is a block that matches both. Texts are compared in a normal form: NFKC, case-folded,
all white space removed (`normal`). A snippet may run over a block boundary (a heading and the paragraph
after it, a line cut by <br> into two blocks), so each snippet is searched in the normal forms of all blocks
joined, and every block an occurrence overlaps is labelled, when the occurrence spans at most `max_span`
consecutive blocks (3: a block and its neighbours). A "with" snippet found in more than one place is
ambiguous (one occurrence in the extraction is enough; which one is meant is unknown) and labels nothing;
a "without" snippet labels every place it occurs, since none of them may be extracted.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bodyblocks.config import DataConfig
from bodyblocks.training.cache import CachedPage, load_cached
from bodyblocks.types import Block

BODY, NOT_BODY, MASKED = 1, 0, -1
_WS = re.compile(r"\s+")


def normal(text: str) -> str:
    """The compared form of a text: NFKC, case-folded, white space removed."""
    return _WS.sub("", unicodedata.normalize("NFKC", text).casefold())


@dataclass
class WeakLabels:
    """One page's weak labels and what its snippets matched."""

    labels: np.ndarray  # int8 per block: BODY, NOT_BODY or MASKED
    with_found: int = 0  # "with" snippets that labelled blocks
    with_ambiguous: int = 0  # "with" snippets found in more than one place (label nothing)
    with_missing: int = 0  # "with" snippets not found in the blocks (or only over more than max_span blocks)
    without_found: int = 0
    without_missing: int = 0
    conflicts: int = 0  # blocks matched by a "with" and a "without" snippet (masked)
    spans: list[tuple[str, int, int]] = field(default_factory=list)  # (kind, first block, last block) matched

    @property
    def labelled(self) -> int:
        return int((self.labels >= 0).sum())


def occurrences(snippet: str, texts: Sequence[str], max_span: int = 3) -> list[tuple[int, int]]:
    """The distinct (first, last) block spans over which the normal form of `snippet` occurs in the normal
    forms `texts` of consecutive blocks joined; spans longer than `max_span` blocks are left out."""
    needle = normal(snippet)
    if not needle or not texts:
        return []
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t)
    hay = "".join(texts)
    spans: list[tuple[int, int]] = []
    at = hay.find(needle)
    while at >= 0:
        first = bisect.bisect_right(starts, at) - 1
        last = bisect.bisect_right(starts, at + len(needle) - 1) - 1
        # blocks of empty normal form share a start with the next block: bisect_right picks the non-empty one
        if last - first + 1 <= max_span and (first, last) not in spans:
            spans.append((first, last))
        at = hay.find(needle, at + 1)
    return spans


def weak_labels(cp: CachedPage, max_span: int = 3) -> WeakLabels:
    """The page's weak block labels from cp.snippets (module docstring); all MASKED when it has none."""
    return label_blocks(cp.blocks, cp.snippets, max_span)


def label_blocks(blocks: Sequence[Block], snippets: dict[str, list[str]] | None, max_span: int = 3
                 ) -> WeakLabels:
    """weak_labels of a block list and its snippets."""
    n = len(blocks)
    out = WeakLabels(labels=np.full(n, MASKED, dtype=np.int8))
    if not snippets or not n:
        return out
    texts = [normal(b.text) for b in blocks]
    body, other = np.zeros(n, bool), np.zeros(n, bool)
    for snippet in snippets.get("with") or []:
        if not normal(snippet):
            continue
        spans = occurrences(snippet, texts, max_span)
        if len(spans) == 1:
            first, last = spans[0]
            body[first : last + 1] = True
            out.with_found += 1
            out.spans.append(("with", first, last))
        elif spans:
            out.with_ambiguous += 1
        else:
            out.with_missing += 1
    for snippet in snippets.get("without") or []:
        if not normal(snippet):
            continue
        spans = occurrences(snippet, texts, max_span)
        for first, last in spans:
            other[first : last + 1] = True
            out.spans.append(("without", first, last))
        if spans:
            out.without_found += 1
        else:
            out.without_missing += 1
    out.labels[body & ~other] = BODY
    out.labels[other & ~body] = NOT_BODY
    out.conflicts = int((body & other).sum())
    return out


def coverage(weak: Iterable[WeakLabels]) -> dict[str, int]:
    """Totals over pages: pages, pages with a labelled block, with both classes, blocks, labelled, body,
    not body, conflicts, and the snippet counts of WeakLabels."""
    keys = ("with_found", "with_ambiguous", "with_missing", "without_found", "without_missing", "conflicts")
    out = dict.fromkeys(("pages", "pages_labelled", "pages_both", "blocks", "labelled", "body", "not_body",
                         *keys), 0)
    for w in weak:
        body, other = int((w.labels == BODY).sum()), int((w.labels == NOT_BODY).sum())
        out["pages"] += 1
        out["pages_labelled"] += int(body + other > 0)
        out["pages_both"] += int(body > 0 and other > 0)
        out["blocks"] += len(w.labels)
        out["labelled"] += body + other
        out["body"] += body
        out["not_body"] += other
        for k in keys:
            out[k] += getattr(w, k)
    return out


WEAK_SPLITS = ("train", "val")  # trafilatura-eval's test split is what docs/EVALUATION.md scores by its snippets


def weak_tuning_pages(data: DataConfig, datasets: Sequence[str], exclude: Sequence[str] = (),
                      splits: Sequence[str] = WEAK_SPLITS) -> list[CachedPage]:
    """The pages of `datasets` (snippet gold only) in `splits` whose weak labels hold a body and a non-body
    block, each a copy whose labels are its weak labels (MASKED: -1). A page from a site that a page of the
    `exclude` datasets comes from (by registrable domain, hosts.Unseen; with any held out, one with no host too) is
    left out, so that a source held out of training stays unseen in tuning (FileNotFoundError when one of them is
    not found). Only pages in data.languages are taken, when it names
    some. A `datasets` folder not found under data.root is warned about and skipped."""
    from bodyblocks.training.data import dataset_folder, held_out_sites, split_name

    def folder(name: str) -> Path | None:
        try:
            return dataset_folder(data, name)
        except (FileNotFoundError, ValueError) as e:
            warnings.warn(f"weak tuning pages: {name}: {e}", stacklevel=3)
            return None

    unseen = held_out_sites(data, tuple(exclude))
    out: list[CachedPage] = []
    for name in datasets:
        path = folder(name)
        if path is None:
            continue
        for cp in load_cached(path, data.cache_dir):
            if cp.error or not cp.blocks or split_name(cp) not in splits or not unseen.keeps(cp.site):
                continue
            if data.languages and cp.lang not in data.languages:  # as load_pages keeps the validation pages
                continue
            labels = weak_labels(cp).labels
            if (labels == BODY).any() and (labels == NOT_BODY).any():
                out.append(dataclasses.replace(cp, labels=[int(x) for x in labels]))
    return out
