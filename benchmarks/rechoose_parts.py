"""The pages benchmarks.rechoose replays: each page of a source's split, segmented, with the shipped default's
P(body) per block (the shipped ensemble's blend of model, trees and vote), cached once under runs/.

    pages = split_parts("dragnet", "train", Path("runs/rechoose"))   # [{id, lang, gold, doc, probs}, ...]

The cache is benchmarks.cache_files' gzipped JSON (no pickle): runs/rechoose/parts/SOURCE-SPLIT.json.gz.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks.cache_files import SUFFIX, read_cached, write_cached
from bodyblocks.evaluation.evaluate import iter_selected, select

SOURCES = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")
CHOOSING = ("train", "val")  # the pages that choose (docs/GENERALIZATION.md's protocol)
REPORTING = ("test",)  # the pages that only report
BATCH = 16  # pages per forward pass


def parts_path(out: Path, source: str, split: str) -> Path:
    return out / "parts" / f"{source}-{split}{SUFFIX}"


def compute_parts(source: str, split: str) -> list[dict[str, Any]]:
    """Each page of the split: id, language, gold text, the segmented Document (None: a page the dataset marks as
    unreadable) and the shipped default's blended P(body) (the extractor's `probabilities`)."""
    from bodyblocks.loading.checkpoints import load_extractor

    ex = load_extractor("ensemble", device="cpu")
    positions, _ = select(source, split, None)
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            for row, probs in zip(pending, ex.probabilities([r["doc"] for r in pending]), strict=True):
                row["probs"] = probs
            pending.clear()

    for page in iter_selected(source, positions):
        try:
            doc = None if page.meta.get("error") else ex.page_segmenter(page.html)
        except Exception as exc:  # noqa: BLE001 - one unreadable page is scored as empty, the batch goes on
            print(f"{source}/{page.id}: not segmented ({type(exc).__name__}: {exc})", file=sys.stderr)
            doc = None
        row: dict[str, Any] = {"id": page.id, "lang": page.lang, "gold": page.gold, "doc": doc, "probs": None}
        rows.append(row)
        if doc is not None and doc.blocks:
            pending.append(row)
            if len(pending) >= BATCH:
                flush()
    flush()
    return rows


def split_parts(source: str, split: str, out: Path) -> list[dict[str, Any]]:
    """The split's pages from the cache, computed and cached on the first call."""
    path = parts_path(out, source, split)
    if path.is_file():
        cached: list[dict[str, Any]] = read_cached(path)
        return cached
    rows = compute_parts(source, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cached(path, rows)
    print(f"cached {path} ({len(rows)} pages)", file=sys.stderr)
    return rows


def source_parts(source: str, splits: tuple[str, ...], out: Path) -> list[dict[str, Any]]:
    """The pages of several splits of a source, in split order."""
    return [row for split in splits for row in split_parts(source, split, out)]


if __name__ == "__main__":  # fill the cache: python -m benchmarks.rechoose_parts [SPLIT ...]
    for split_name in sys.argv[1:] or CHOOSING:
        for name in SOURCES:
            split_parts(name, split_name, Path("runs/rechoose"))
