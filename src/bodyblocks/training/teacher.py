"""Teacher labels for a noisy student: a strong (slow) ensemble labels the blocks of pages that have no full gold,
and the fast model trains on those labels beside the gold pages.

    bodyblocks data teacher trafilatura-eval gne-pages --ensemble runs/teacher/ens --out runs/teacher/labels.jsonl.gz \
        --exclude wcxb-dev                                  # never a page of (or from a site of) the held-out source
    bodyblocks train configs/default.yaml --set 'train.teacher_labels=[runs/teacher/labels.jsonl.gz]'

A block's teacher label is 1 where the teacher ensemble's blended P(body) reaches `threshold`, else 0, and it is
masked (IGNORE, no loss) where the teacher is unsure (low < P < high) or where every peer extractor given
(trafilatura and readability) disagrees with it; a peer's label of a block comes from aligning its text with the
page's blocks as gold text is aligned (labels.align_blocks). Where the page has must-contain / must-not-contain
snippets (trafilatura-eval), their weak labels (weak.py) win over the teacher's. The labels file is gzip JSON lines,
one page a line: dataset, id, the number of blocks and a hash of their texts (so that labels never meet other
blocks), the labels, the teacher's P(body) (3 decimals) and each peer's labels, so that another mask can be made
from it without the teacher.

At training (`train.teacher_labels`), the labelled pages join the training pages with the teacher's labels; a page
that is already one of the run's gold pages (any split) keeps its gold, and a page with no unmasked block is left
out.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.config import DataConfig
from bodyblocks.inference.inputs import IGNORE
from bodyblocks.training.cache import CachedPage, load_cached
from bodyblocks.training.hosts import Unseen
from bodyblocks.training.labels import align_blocks
from bodyblocks.types import Block

LOW, HIGH = 0.3, 0.7  # the band of P(body) where the teacher is unsure: masked
PEERS = ("trafilatura", "readability")


def blocks_key(blocks: Sequence[Block]) -> int:
    """A hash of the blocks' texts in order: the labels of a file meet only the blocks they were made for."""
    h = 0
    for b in blocks:
        h = zlib.crc32(b.text.encode("utf-8", "replace") + b"\x00", h)
    return h


def peer_labels(blocks: Sequence[Block], text: str | None) -> np.ndarray:
    """A peer's label of each block: its extracted text aligned with the blocks as gold is (no text: all 0)."""
    if not text or not text.strip():
        return np.zeros(len(blocks), dtype=np.int64)
    return np.asarray(align_blocks(blocks, text).labels, dtype=np.int64)


def teacher_targets(probs: np.ndarray, *, threshold: float = 0.5, low: float = LOW, high: float = HIGH,
                    peers: Sequence[np.ndarray] = (), weak: np.ndarray | None = None) -> np.ndarray:
    """The teacher's label of each block (1 where P >= threshold), IGNORE where low < P < high or where every one
    of `peers` (when there are any) gives the other label; `weak` labels (1, 0; -1 none) win where they are set."""
    p = np.asarray(probs, dtype=np.float64)
    out = (p >= threshold).astype(np.int64)
    masked = (p > low) & (p < high)
    if len(peers):
        masked |= np.all(np.stack([np.asarray(x) != out for x in peers]), axis=0)
    out[masked] = IGNORE
    if weak is not None:
        w = np.asarray(weak)
        out[w >= 0] = w[w >= 0]
    return out


@dataclass
class LabelStats:
    """What a labelling run did."""

    pages: int = 0  # pages labelled
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> pages left out
    blocks: int = 0
    body: int = 0  # blocks labelled body
    masked: int = 0  # blocks masked (no loss)
    masked_by_peers: int = 0  # of those, masked because both peers disagreed (and the teacher was sure)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def line(self) -> str:
        share = self.masked / max(self.blocks, 1)
        return (f"{self.pages} pages, {self.blocks} blocks: {self.body} body, {self.masked} masked ({share:.1%}; "
                f"{self.masked_by_peers} by the peers)" + "".join(f", {n} skipped ({k})" for k, n in
                                                              sorted(self.skipped.items())))


def label_pages(extractor: Any, pages: Sequence[tuple[CachedPage, bytes | str]], *, low: float = LOW,
                high: float = HIGH, peers: dict[str, Any] | None = None, snippets: bool = True,
                stats: LabelStats | None = None, progress: Callable[[str], None] | None = None
                ) -> Iterator[dict[str, Any]]:
    """One labels-file row per page: `extractor` (an ensemble BlockExtractor) segments the page's HTML, and its
    blended P(body) of each block makes the teacher's labels (teacher_targets, its rule's threshold); `peers`
    (name -> an Extractor) mask where all of them disagree. Pages whose blocks are not the cached page's are
    skipped (a segmenter changed since the cache was built)."""
    from bodyblocks.training.weak import weak_labels

    stats = stats if stats is not None else LabelStats()
    threshold = float(getattr(extractor.rule, "threshold", 0.5))
    for k, (cp, html) in enumerate(pages):
        try:
            doc = extractor.page_segmenter(html)
        except Exception:  # noqa: BLE001 - a page the segmenter refuses is skipped, not fatal
            stats.skip("segmenter error")
            continue
        if not doc.blocks:
            stats.skip("no blocks")
            continue
        if [b.text for b in doc.blocks] != [b.text for b in cp.blocks]:
            stats.skip("blocks differ from the cache")
            continue
        prepared = extractor.prepare([doc])
        probs = extractor.combine(prepared, extractor.forward(prepared))[0]
        votes: dict[str, list[int]] = {}
        for name, peer in (peers or {}).items():
            try:
                votes[name] = peer_labels(doc.blocks, peer.extract(html).text).tolist()
            except Exception:  # noqa: BLE001 - a peer that fails on a page gives no vote there
                stats.skip(f"{name} failed (page kept)")
        weak = weak_labels(cp).labels if snippets and cp.snippets else None
        together = [np.asarray(v) for v in votes.values()] if len(votes) == len(peers or {}) else []
        labels = teacher_targets(probs, threshold=threshold, low=low, high=high, peers=together, weak=weak)
        sure = (probs <= low) | (probs >= high)
        stats.pages += 1
        stats.blocks += len(labels)
        stats.body += int((labels == 1).sum())
        stats.masked += int((labels == IGNORE).sum())
        if together:
            hard = (probs >= threshold).astype(np.int64)
            by_peers = sure & np.all(np.stack([v != hard for v in together]), axis=0)
            if weak is not None:
                by_peers &= np.asarray(weak) < 0
            stats.masked_by_peers += int(by_peers.sum())
        if progress is not None and k % 100 == 99:
            progress(f"{k + 1} of {len(pages)} pages: {stats.line()}")
        yield {"dataset": cp.dataset, "id": cp.id, "n": len(cp.blocks), "key": blocks_key(cp.blocks),
               "labels": labels.tolist(), "p": [round(float(x), 3) for x in probs], "peers": votes}


def write_labels(path: str | Path, rows: Iterator[dict[str, Any]]) -> int:
    """Write labels-file rows (gzip JSON lines); returns how many."""
    from bodyblocks.files import atomic_path

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with atomic_path(target) as tmp, gzip.open(tmp, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a labels file."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def excluded_sites(data: DataConfig, exclude: Sequence[str]) -> Unseen:
    """The sites of every page of the `exclude` datasets (data.held_out_sites: by registrable domain)."""
    from bodyblocks.training.data import held_out_sites

    return held_out_sites(data, tuple(exclude))


def teacher_pages(paths: Sequence[str | Path], data: DataConfig,
                  gold: dict[str, list[CachedPage]] | None = None) -> list[CachedPage]:
    """The pages of the labels files, each a copy of its cached page whose labels are the teacher's. Left out: a
    page of `gold` (the run's own pages, any split), one whose blocks are not those the labels were made for, one
    from a site of data.exclude_sites_of, one outside data.languages (when it names some) and one with every block
    masked."""
    from bodyblocks.training.data import dataset_folder

    taken = {(cp.dataset, cp.id) for pages in (gold or {}).values() for cp in pages}
    unseen = excluded_sites(data, data.exclude_sites_of)
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        for row in read_labels(path):
            rows.setdefault(row["dataset"], {})[row["id"]] = row
    out: list[CachedPage] = []
    for name, by_id in rows.items():
        for cp in load_cached(dataset_folder(data, name), data.cache_dir):
            row = by_id.get(cp.id)
            if row is None or (cp.dataset, cp.id) in taken or cp.error or not unseen.keeps(cp.site):
                continue
            if row["n"] != len(cp.blocks) or row["key"] != blocks_key(cp.blocks):
                continue
            if data.languages and cp.lang not in data.languages:
                continue
            if all(x == IGNORE for x in row["labels"]):
                continue
            out.append(replace(cp, labels=[int(x) for x in row["labels"]], split="train"))
    return out
