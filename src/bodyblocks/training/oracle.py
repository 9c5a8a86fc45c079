"""The block-level oracle (body-labelled blocks joined) and dataset statistics, computed from the cache.

The oracle is the ceiling of any block classifier: it keeps exactly the blocks the labels call body.
Its accuracy is the share of gold pages whose Levenshtein ratio (white space removed, metrics.py) reaches
ORACLE_THRESHOLD. Pages with empty gold are left out and counted; pages that failed to process count
as misses (their oracle text is empty).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bodyblocks.metrics import levenshtein_ratio
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.labels import oracle_text

ORACLE_THRESHOLD = 0.9
_EPS = 1e-9


@dataclass
class OracleRow:
    """Oracle accuracy over one group of pages (a dataset, or a dataset's language)."""

    dataset: str
    lang: str
    pages: int  # pages with non-empty gold
    accurate: int  # of which ratio >= ORACLE_THRESHOLD
    mean_ratio: float

    @property
    def accuracy(self) -> float:
        return self.accurate / self.pages if self.pages else 0.0


def page_ratio(cp: CachedPage) -> float | None:
    """The oracle's Levenshtein ratio on one page, None when the gold is empty or absent."""
    if not cp.has_gold:
        return None
    return levenshtein_ratio(cp.gold or "", oracle_text(cp.blocks, cp.labels))


def oracle_rows(pages: Sequence[CachedPage], by_lang: bool = True) -> list[OracleRow]:
    """One row per dataset (lang "all") and, with by_lang, one per dataset and language."""
    groups: dict[tuple[str, str], list[float]] = {}
    for cp in pages:
        r = page_ratio(cp)
        if r is None:
            continue
        groups.setdefault((cp.dataset, "all"), []).append(r)
        if by_lang:
            groups.setdefault((cp.dataset, cp.lang or "?"), []).append(r)
    rows = []
    for (ds, lang), ratios in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        ok = sum(r >= ORACLE_THRESHOLD - _EPS for r in ratios)
        rows.append(OracleRow(ds, lang, len(ratios), ok, sum(ratios) / len(ratios)))
    return rows


def format_rows(rows: Sequence[OracleRow]) -> str:
    """A plain-text table of oracle rows."""
    lines = [f"{'dataset':<18} {'lang':<5} {'pages':>6} {'acc@0.9':>8} {'mean':>6}"]
    lines += [f"{r.dataset:<18} {r.lang:<5} {r.pages:>6} {r.accuracy:>8.3f} {r.mean_ratio:>6.3f}" for r in rows]
    return "\n".join(lines)


def write_oracle(pages: Sequence[CachedPage], out_dir: str | Path) -> int:
    """Write <out_dir>/<id>.txt (the oracle text) for every page with gold; returns the number written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for cp in pages:
        if cp.gold is None:
            continue
        (out / f"{cp.id}.txt").write_text(oracle_text(cp.blocks, cp.labels) + "\n", encoding="utf-8")
        n += 1
    return n


def misses(pages: Sequence[CachedPage], below: float = ORACLE_THRESHOLD) -> list[tuple[float, CachedPage]]:
    """Pages whose oracle ratio is below `below`, worst first."""
    scored = [(r, cp) for cp in pages if (r := page_ratio(cp)) is not None and r < below - _EPS]
    return sorted(scored, key=lambda t: t[0])


def dataset_stats(pages: Sequence[CachedPage]) -> dict[str, Any]:
    """Pages, blocks, body share, languages, failures and oracle accuracy of processed pages."""
    blocks = sum(len(cp.blocks) for cp in pages)
    body = sum(sum(cp.labels) for cp in pages)
    chars = sum(b.text_len for cp in pages for b in cp.blocks)
    body_chars = sum(b.text_len for cp in pages for b, y in zip(cp.blocks, cp.labels, strict=True) if y)
    return {
        "pages": len(pages),
        "with_gold": sum(cp.has_gold for cp in pages),
        "empty_gold": sum(cp.gold is not None and not cp.has_gold for cp in pages),
        "failed": sum(cp.error is not None for cp in pages),
        "failures": Counter((cp.error or "").split(":")[0] for cp in pages if cp.error),
        "blocks": blocks,
        "blocks_per_page": blocks / len(pages) if pages else 0.0,
        "body_block_share": body / blocks if blocks else 0.0,
        "body_char_share": body_chars / chars if chars else 0.0,
        "languages": Counter(cp.lang or "?" for cp in pages),
        "label_methods": Counter(cp.method for cp in pages),
        "replaced_decoding": sum(cp.replaced for cp in pages),
        "oracle": oracle_rows(pages),
    }


def format_stats(name: str, st: dict[str, Any]) -> str:
    """Human-readable statistics of one dataset."""
    langs = ", ".join(f"{k} {v}" for k, v in st["languages"].most_common())
    fails = ", ".join(f"{k} {v}" for k, v in st["failures"].most_common()) or "none"
    head = [
        f"dataset {name}: {st['pages']} pages ({st['with_gold']} with gold, {st['empty_gold']} empty gold, "
        f"{st['failed']} failed: {fails})",
        f"blocks {st['blocks']} ({st['blocks_per_page']:.1f} per page); body share {st['body_block_share']:.3f} "
        f"of blocks, {st['body_char_share']:.3f} of characters",
        f"languages: {langs}; labels from: {dict(st['label_methods'])}; "
        f"pages decoded with replacement: {st['replaced_decoding']}",
    ]
    return "\n".join(head) + ("\n" + format_rows(st["oracle"]) if st["oracle"] else "\n(no gold text: no oracle)")
