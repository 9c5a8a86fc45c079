"""Scores of one extraction against gold text, and their aggregation over many pages.

Per page (`score_page`):
  1. Levenshtein ratio between gold and extracted text with all white space removed, as in the reference
     paper. "Ratio" is python-Levenshtein's `ratio` = rapidfuzz's Indel normalised similarity
     (1 - (insertions + deletions) / (len(a) + len(b))); two empty strings score 1.0.
  2. token precision / recall / F1 over bags (multisets) of tokens: each CJK character (Han, kana,
     Hangul, CJK punctuation excluded) is one token, any other run of word characters is one lower-cased
     token; an empty extraction has precision 0.
  3. line-level recall: the share of gold lines found in the extraction (rule in `line_found`).
  4. snippet counts where the dataset has must-contain ("with") / must-not-contain ("without") snippets:
     a snippet is found when its white-space-free form is a substring of the white-space-free extraction.
Pages whose gold is empty (or absent) get no text scores: they are skipped and counted (`summarize`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz.distance import Indel
from rapidfuzz.fuzz import partial_ratio

THRESHOLDS: tuple[float, ...] = (0.70, 0.75, 0.80, 0.85, 0.90)
CURVE_THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + 0.01 * i, 2) for i in range(51))  # 0.50 .. 1.00
LINE_MATCH = 90.0  # partial_ratio (0-100) at which a gold line counts as found
LINE_EXACT_BELOW = 10  # gold lines shorter than this (white space removed) must occur exactly
_EPS = 1e-9  # ratios are floats; 0.8999999 must still count as 0.90

_WS = re.compile(r"\s+")
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs, extension A, compatibility
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0002ffff"  # CJK extensions B-F and supplements
)
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


def squash(text: str) -> str:
    """Remove all white space (the paper's normalisation before the Levenshtein ratio)."""
    return _WS.sub("", text)


def levenshtein_ratio(gold: str, pred: str) -> float:
    """Indel-normalised Levenshtein similarity in [0, 1] of the two texts, white space removed."""
    return float(Indel.normalized_similarity(squash(gold), squash(pred)))


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens; every CJK character is a token of its own."""
    return _TOKEN.findall(text.lower())


def token_prf(gold: str, pred: str) -> tuple[float, float, float]:
    """Precision, recall and F1 of the extraction's token bag against the gold token bag."""
    g, p = Counter(tokens(gold)), Counter(tokens(pred))
    overlap = sum((g & p).values())
    precision = overlap / sum(p.values()) if p else 0.0
    recall = overlap / sum(g.values()) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def line_found(line: str, pred_squashed: str) -> bool:
    """Whether one gold line occurs in the (white-space-free) extraction.

    Rule: the line, white space removed, is found when it is a substring of the extraction; lines of
    LINE_EXACT_BELOW characters or more are also found when rapidfuzz's partial_ratio (best-aligned
    substring) reaches LINE_MATCH, which tolerates small differences in punctuation or spelling.
    Matching is order-free: each line is looked up in the whole extraction.
    """
    needle = squash(line)
    if not needle or needle in pred_squashed:
        return True
    if len(needle) < LINE_EXACT_BELOW or not pred_squashed:
        return False
    if len(needle) > len(pred_squashed):  # partial_ratio would align the shorter extraction inside the line
        return Indel.normalized_similarity(needle, pred_squashed) * 100 >= LINE_MATCH
    return partial_ratio(needle, pred_squashed, score_cutoff=LINE_MATCH) >= LINE_MATCH


def gold_lines(gold: str) -> list[str]:
    """The gold text's non-empty lines."""
    return [line for line in gold.splitlines() if line.strip()]


def line_recall(gold: str, pred: str) -> float:
    """Share of the gold's non-empty lines found in the extraction (see `line_found`)."""
    lines = gold_lines(gold)
    if not lines:
        return 0.0
    hay = squash(pred)
    return sum(line_found(line, hay) for line in lines) / len(lines)


def snippet_counts(snippets: dict[str, list[str]] | None, pred: str) -> tuple[int, int, int, int]:
    """(true pos, false neg, false pos, true neg) of must-contain / must-not-contain snippets."""
    if not snippets:
        return 0, 0, 0, 0
    hay = squash(pred)
    with_ = [squash(s) for s in snippets.get("with") or [] if squash(s)]
    without = [squash(s) for s in snippets.get("without") or [] if squash(s)]
    tp = sum(s in hay for s in with_)
    fp = sum(s in hay for s in without)
    return tp, len(with_) - tp, fp, len(without) - fp


@dataclass
class PageScore:
    """Every figure for one page; text scores are None when the gold is empty or absent."""

    has_gold: bool
    ratio: float | None = None
    token_precision: float | None = None
    token_recall: float | None = None
    token_f1: float | None = None
    line_recall: float | None = None
    snippet_tp: int = 0
    snippet_fn: int = 0
    snippet_fp: int = 0
    snippet_tn: int = 0

    @property
    def has_snippets(self) -> bool:
        return self.snippet_tp + self.snippet_fn + self.snippet_fp + self.snippet_tn > 0


def score_page(gold: str | None, pred: str, snippets: dict[str, list[str]] | None = None) -> PageScore:
    """All per-page figures of one extraction; an empty or absent gold gives no text scores."""
    tp, fn, fp, tn = snippet_counts(snippets, pred)
    if gold is None or not squash(gold):
        return PageScore(False, snippet_tp=tp, snippet_fn=fn, snippet_fp=fp, snippet_tn=tn)
    precision, recall, f1 = token_prf(gold, pred)
    return PageScore(
        True,
        ratio=levenshtein_ratio(gold, pred),
        token_precision=precision,
        token_recall=recall,
        token_f1=f1,
        line_recall=line_recall(gold, pred),
        snippet_tp=tp,
        snippet_fn=fn,
        snippet_fp=fp,
        snippet_tn=tn,
    )


def accuracy(ratios: Sequence[float], threshold: float) -> float:
    """Share of pages whose ratio is at or above the threshold (0.0 for no pages)."""
    if not ratios:
        return 0.0
    return sum(r >= threshold - _EPS for r in ratios) / len(ratios)


def accuracy_curve(
    ratios: Sequence[float], thresholds: Iterable[float] = CURVE_THRESHOLDS
) -> dict[str, float]:
    """Accuracy at each threshold, keyed by the threshold written with two decimals."""
    return {f"{t:.2f}": accuracy(ratios, t) for t in thresholds}


def _mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for no values."""
    return math.fsum(values) / len(values) if values else None


def _snippet_summary(scores: Sequence[PageScore]) -> dict[str, Any]:
    """Micro-averaged snippet precision / recall / F1 over all pages with snippets."""
    with_snip = [s for s in scores if s.has_snippets]
    tp = sum(s.snippet_tp for s in with_snip)
    fn = sum(s.snippet_fn for s in with_snip)
    fp = sum(s.snippet_fp for s in with_snip)
    tn = sum(s.snippet_tn for s in with_snip)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "snippet_pages": len(with_snip),
        "snippet_tp": tp, "snippet_fn": fn, "snippet_fp": fp, "snippet_tn": tn,
        "snippet_precision": precision, "snippet_recall": recall, "snippet_f1": f1,
    }


def summarize(scores: Sequence[PageScore]) -> dict[str, Any]:
    """Aggregate page scores: accuracy at THRESHOLDS, means, counts of skipped pages, snippet figures.

    Text figures are macro-averaged over the pages with non-empty gold ("scored"); pages without gold
    are counted in "skipped_no_gold" and contribute only to the snippet figures.
    """
    scored = [s for s in scores if s.has_gold]
    ratios = [s.ratio for s in scored if s.ratio is not None]
    out: dict[str, Any] = {
        "pages": len(scores),
        "scored": len(scored),
        "skipped_no_gold": len(scores) - len(scored),
        "mean_ratio": _mean(ratios),
    }
    for t in THRESHOLDS:
        out[f"acc@{t:.2f}"] = accuracy(ratios, t) if ratios else None
    for key in ("token_precision", "token_recall", "token_f1", "line_recall"):
        out[key] = _mean([getattr(s, key) for s in scored])
    out.update(_snippet_summary(scores))
    out["curve"] = accuracy_curve(ratios) if ratios else {}
    return out
