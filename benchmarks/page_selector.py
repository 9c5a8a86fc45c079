"""A page-level choice between the ensemble's answer and the heuristic's, measured leave-one-source-out.

    python -m benchmarks.page_selector                 # after benchmarks.loso_blend (its parts and grid)

The ensemble decides block by block; the heuristic (baselines/heuristic.py) picks one container. On a source none
of the learners saw, the heuristic is sometimes the better answer for a whole page (on wcxb-dev it is ahead of the
ensemble overall, 0.803 against 0.779, and choosing the better of the two page by page would reach about 0.85).
Both answers are at hand at run time (the vote is made from the heuristic's text), so a small logistic regression
over page-level figures of the two answers (FEATURES) could choose between them. This measures that choice
leave-one-source-out:

  1. answers/S.pkl  the heuristic's text of each of S's test pages (in the order of loso_blend's parts/S.pkl);
  2. for fold S, each page's FEATURES and the token F1 of both answers under S's nested blend (loso_blend: the
     grid's best on the other folds); a logistic regression on "the heuristic's text scores better", each page
     weighted by how much the choice moves its token F1, fitted on the *other* folds' pages, chooses S's answers;
  3. the same for a few values of the regression's C and of the probability at which the heuristic is taken
     (an ablation: none of them is chosen on a fold's own pages), and daniel's pages by language.

The doc (docs/generalization-selector.md) has each fold's figure without and with the selector, the peers', the
best possible choice (an oracle, not an extractor), and the share of pages given the heuristic's text.
"""

from __future__ import annotations

import argparse
import math
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.loso_blend import (
    PEERS,
    SOURCES,
    ZH,
    Setting,
    _fmt,
    _summary,
    best,
    log,
    page_decision,
    peer_rows,
    rule_of,
    write_doc,
)
from bodyblocks.files import write_atomic
from bodyblocks.metrics import PageScore, score_page, squash
from bodyblocks.types import Block

FEATURES = (
    "log_chars_kept",  # characters (white space excluded) of the ensemble's answer, log(1 + n)
    "log_chars_voted",  # of the blocks in the heuristic's answer (the vote)
    "log_chars_page",  # of the page's blocks
    "overlap",  # characters both kept and voted / characters kept or voted
    "kept_voted",  # characters both kept and voted / characters kept
    "voted_kept",  # characters both kept and voted / characters voted
    "p_voted",  # mean P(body) of the voted blocks, weighted by characters
    "p_kept",  # mean P(body) of the kept blocks, weighted by characters
    "p_max",  # the page's highest P(body)
    "links_kept",  # link characters / characters of the kept blocks
    "links_voted",  # of the voted blocks
    "share_kept",  # characters kept / characters of the page
    "share_voted",  # characters voted / characters of the page
    "log_runs_kept",  # runs of consecutive kept blocks, log(1 + n)
    "log_runs_voted",  # runs of consecutive voted blocks
    "p_voted_dropped",  # mean P(body) of the voted blocks the ensemble leaves out
    "log_blocks",  # blocks of the page, log(1 + n)
    "log_chars_answer",  # characters of the heuristic's own text, log(1 + n)
)
C_VALUES = (0.1, 1.0, 10.0)
CUTS = (0.4, 0.5, 0.6, 0.7)
SHOWN = (1.0, 0.5)  # (C, cut) of the main row: sklearn's default C, the even odds
MIN_WEIGHT = 1e-3  # of a page whose two answers score the same


def _mean(x: np.ndarray, w: np.ndarray) -> float:
    total = float(w.sum())
    return float((x * w).sum() / total) if total else 0.0


def _runs(mask: np.ndarray) -> int:
    return int(np.count_nonzero(mask[1:] & ~mask[:-1]) + bool(mask[:1].any())) if len(mask) else 0


def page_features(blocks: Sequence[Block], probs: np.ndarray, kept: np.ndarray, vote: np.ndarray, answer: str
                  ) -> np.ndarray:
    """FEATURES of one page: its blocks, their blended P(body), the decision rule's kept mask, the vote and the
    heuristic's text."""
    chars = np.fromiter((b.text_len for b in blocks), np.float64, len(blocks))
    links = np.fromiter((b.link_len for b in blocks), np.float64, len(blocks))
    probs = np.asarray(probs, np.float64)
    k, v = np.asarray(kept, bool), np.asarray(vote) > 0.5
    ck, cv, both, either = chars[k].sum(), chars[v].sum(), chars[k & v].sum(), chars[k | v].sum()
    page = chars.sum()
    answer_chars = len(squash(answer))
    return np.array([
        math.log1p(ck), math.log1p(cv), math.log1p(page),
        both / (either + 1), both / (ck + 1), both / (cv + 1),
        _mean(probs[v], chars[v]), _mean(probs[k], chars[k]), float(probs.max()) if len(probs) else 0.0,
        links[k].sum() / (ck + 1), links[v].sum() / (cv + 1), ck / (page + 1), cv / (page + 1),
        math.log1p(_runs(k)), math.log1p(_runs(v)), _mean(probs[v & ~k], chars[v & ~k]),
        math.log1p(len(blocks)), math.log1p(answer_chars),
    ], np.float64)


@dataclass
class Choice:
    """A logistic regression over standardised FEATURES: P(the heuristic's text is the better answer)."""

    mean: np.ndarray
    scale: np.ndarray
    model: Any
    cut: float

    def prefers_heuristic(self, features: np.ndarray) -> bool:
        z = (features - self.mean) / self.scale
        return float(self.model.predict_proba(z[None])[0, 1]) >= self.cut


def fit(features: np.ndarray, gain: np.ndarray, c: float = 1.0, cut: float = 0.5) -> Choice:
    """The choice fitted on pages' FEATURES and gains (token F1 of the heuristic's text minus the ensemble's): a
    logistic regression on gain > 0, each page weighted by |gain|, so that it loses as little token F1 as it can
    rather than making as few wrong choices as it can."""
    from sklearn.linear_model import LogisticRegression

    y = gain > 0
    if y.all() or not y.any():
        raise ValueError("page selector: needs pages where each answer is the better one")
    mean, scale = features.mean(axis=0), features.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((features - mean) / scale, y,
                                                       sample_weight=np.abs(gain) + MIN_WEIGHT)
    return Choice(mean, scale, model, cut)


@dataclass
class PageRow:
    """One test page with gold under one blend: FEATURES (None: no choice, the heuristic found no text or the page
    no block) and the scores of the ensemble's answer and of the heuristic's text."""

    lang: str
    features: np.ndarray | None
    blocks: PageScore
    heuristic: PageScore

    def score(self, choice: Choice | None) -> PageScore:
        chosen = choice is not None and self.features is not None and choice.prefers_heuristic(self.features)
        return self.heuristic if chosen else self.blocks

    @property
    def gain(self) -> float:
        return self.heuristic.token_f1 - self.blocks.token_f1


def answers(source: str, out: Path, ids: list[str]) -> list[str]:
    """answers/S.pkl: the heuristic's text of S's test pages (made when missing), checked against the parts' ids."""
    path = out / "answers" / f"{source}.pkl"
    if not path.exists():
        from bodyblocks.baselines.heuristic import heuristic_text
        from bodyblocks.errors import InputError
        from bodyblocks.evaluation.evaluate import iter_selected, select

        log(f"{source}: the heuristic's text of the test pages")
        rows = []
        for page in iter_selected(source, select(source, "test", None)[0]):
            try:
                text = "" if page.meta.get("error") else heuristic_text(page.html)
            except InputError:
                text = ""
            rows.append((page.id, text))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, pickle.dumps(rows))
    rows = pickle.loads(path.read_bytes())
    if [i for i, _ in rows] != ids:
        raise SystemExit(f"{path}: not the pages of the fold's parts (delete it and run again)")
    return [t for _, t in rows]


def page_rows(pages: list[dict[str, Any]], texts: list[str], setting: Setting) -> list[PageRow]:
    """The test pages with gold under the blend and rule of `setting`."""
    blend, rule = rule_of(setting)
    out = []
    for p, answer in zip(pages, texts, strict=True):
        decided = page_decision(p, blend, rule)
        if decided is None:
            empty = score_page(p["gold"], "")
            if empty.has_gold:
                out.append(PageRow(p["lang"], None, empty, score_page(p["gold"], answer)))
            continue
        probs, ex = decided
        scored = score_page(p["gold"], ex.text)
        if not scored.has_gold:
            continue
        kept = np.zeros(len(ex.blocks), bool)
        kept[ex.kept or []] = True
        features = page_features(ex.blocks, probs, kept, p["vote"], answer) if answer.strip() else None
        out.append(PageRow(p["lang"], features, scored, score_page(p["gold"], answer)))
    return out


def fit_rows(rows: list[PageRow], c: float, cut: float) -> Choice:
    chosen = [r for r in rows if r.features is not None]
    return fit(np.array([r.features for r in chosen]), np.array([r.gain for r in chosen]), c, cut)


def report(args: argparse.Namespace) -> str:
    grid = pickle.loads((args.blend / "grid.pkl").read_bytes())
    parts = {s: pickle.loads((args.blend / "parts" / f"{s}.pkl").read_bytes()) for s in SOURCES}
    texts = {s: answers(s, args.out, [p["id"] for p in parts[s]]) for s in SOURCES}
    nested = {f: best(grid, tuple(g for g in SOURCES if g != f)) for f in SOURCES}
    rows = {(f, s): page_rows(parts[f], texts[f], s) for s in set(nested.values()) for f in SOURCES}
    cols = [*SOURCES, ZH]

    def figures(choose: Any) -> dict[str, tuple[float, float]]:
        out = {}
        for f in SOURCES:
            mine = rows[(f, nested[f])]
            scores = [choose(f, r) for r in mine]
            out[f] = _summary(scores)
            if f == "daniel":
                out[ZH] = _summary([s for s, r in zip(scores, mine, strict=True) if r.lang == "zh"])
        return out

    fitted = {(c, cut, f): fit_rows([r for g in SOURCES if g != f for r in rows[(g, nested[f])]], c, cut)
              for c in C_VALUES for cut in CUTS for f in SOURCES}
    plain = figures(lambda f, r: r.blocks)
    heuristic = figures(lambda f, r: r.heuristic)
    oracle = figures(lambda f, r: r.heuristic if r.gain > 0 else r.blocks)
    chosen = figures(lambda f, r: r.score(fitted[(*SHOWN, f)]))
    peers = peer_rows(args.peers)

    def mean(d: dict[str, tuple[float, float]]) -> tuple[float, float]:
        return float(np.mean([d[f][0] for f in SOURCES])), float(np.mean([d[f][1] for f in SOURCES]))

    def row(name: str, d: dict[str, tuple[float, float]], bold: bool = False) -> str:
        m = _fmt(mean(d))
        return f"| {name} | " + " | ".join(_fmt(d[f]) for f in cols) + f" | {f'**{m}**' if bold else m} |"

    share = {f: float(np.mean([r.score(fitted[(*SHOWN, f)]) is r.heuristic and r.features is not None
                               for r in rows[(f, nested[f])]])) for f in SOURCES}
    lines = [
        "# A page-level choice between the ensemble's answer and the heuristic's, leave-one-source-out",
        "",
        "Written by benchmarks/page_selector.py (its docstring says how), from the fold parts of "
        f"benchmarks/loso_blend.py (`{args.blend}`: each fold's Transformer and trees trained without its source) "
        "and each fold's nested blend. Token F1 / acc@0.9 on each source's test pages; mean over the six folds, "
        "daniel's Chinese pages apart.",
        "",
        f"Command: `python -m benchmarks.page_selector --blend {args.blend} --out {args.out} --doc {args.doc}`",
        "",
        "| extractor | " + " | ".join(cols) + " | mean |",
        "|---|" + "---|" * (len(cols) + 1),
        row("ensemble, blend chosen on the other folds", plain, True),
        row(f"the same + page selector fitted on the other folds (C {SHOWN[0]}, cut {SHOWN[1]})", chosen, True),
        row("the heuristic's text on every page", heuristic),
        row("the better of the two on each page (an oracle, not an extractor)", oracle),
        *[row(p, peers[p]) for p in PEERS],
        "",
        "Share of each fold's pages given the heuristic's text by the selector: "
        + ", ".join(f"{f} {share[f]:.2f}" for f in SOURCES) + ". "
        + f"Mean with the selector {_fmt(mean(chosen))} against {_fmt(mean(plain))} without it: "
        + ("ahead" if mean(chosen)[0] > mean(plain)[0] else "not ahead") + "; folds where it loses token F1: "
        + (", ".join(f"{f} ({chosen[f][0] - plain[f][0]:+.4f})" for f in SOURCES if chosen[f][0] < plain[f][0])
           or "none") + ".",
        "",
        "Mean token F1 over the six folds for other values of the regression's C and of the probability at which "
        "the heuristic's text is taken (every fold's selector fitted on the other folds' pages), against "
        f"{mean(plain)[0]:.3f} without the selector:",
        "",
        "| C | " + " | ".join(f"cut {cut}" for cut in CUTS) + " |",
        "|---|" + "---|" * len(CUTS),
    ]
    for c in C_VALUES:
        cells = [mean(figures(lambda f, r, c=c, cut=cut: r.score(fitted[(c, cut, f)])))[0] for cut in CUTS]
        lines.append(f"| {c} | " + " | ".join(f"{x:.3f}" for x in cells) + " |")
    lines += ["", "daniel's pages by language, the selector fitted on the other five folds (token F1):", "",
              "| language | pages | heuristic's text chosen | ensemble | with the selector | the heuristic |",
              "|---|---|---|---|---|---|"]
    choice = fitted[(*SHOWN, "daniel")]
    for lang in sorted({r.lang for r in rows[("daniel", nested["daniel"])]}):
        mine = [r for r in rows[("daniel", nested["daniel"])] if r.lang == lang]
        picked = sum(r.score(choice) is r.heuristic and r.features is not None for r in mine)
        f1 = [float(np.mean([getattr(r, k).token_f1 for r in mine])) for k in ("blocks", "heuristic")]
        lines.append(f"| {lang} | {len(mine)} | {picked} | {f1[0]:.3f} | "
                     f"{float(np.mean([r.score(choice).token_f1 for r in mine])):.3f} | {f1[1]:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blend", type=Path, default=Path("runs/loso-blend"), help="loso_blend's --out (parts, grid)")
    ap.add_argument("--peers", type=Path, default=Path("runs/loso"), help="fold folders with eval-PEER.json")
    ap.add_argument("--out", type=Path, default=Path("runs/page-selector"), help="the heuristic's texts")
    ap.add_argument("--doc", type=Path, default=Path("docs/generalization-selector.md"))
    args = ap.parse_args()
    write_doc(args.doc, report(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
