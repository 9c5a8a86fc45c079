"""A block-level cascade (issue 45): the Transformer's context only over the blocks whose decision the trees and
the vote leave open, on that shorter sequence, against the ensemble as shipped, on the same pages.

    python -m benchmarks.cascade --pages 60                          # the shipped ensemble, each source's test split
    python -m benchmarks.cascade --fold wcxb-dev --models runs/t43/loso-recipe --trees runs/t43/loso-vocab

The ensemble's P(body) is w * model + h * vote + (1 - w - h) * trees. Without the model a block's P lies in
[rest, rest + w] (rest = h * vote + (1 - w - h) * trees); a block whose rest is at most LO or at least HI is
taken as decided: its model P(body) is set to 0 (at most LO) or 1 (at least HI), and the model runs on the other
blocks only (with CONTEXT neighbours on each side), as a page of its own. A page with no open block skips the
model. Per source: token F1 / acc@0.9 both ways (each page scored by its source's gold convention), pages whose
text differs, the share of blocks the model runs on, and the forward pass's CPU ms a page both ways (one
thread, ONNX Runtime, the model's inputs included). `--fold F`: the fold's own model and trees (trained without
F, benchmarks/loso.py) on F's test pages, blended at --setting.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import arguments
from benchmarks.loso_blend import SOURCES, rule_meta, rule_of
from bodyblocks.evaluation.evaluate import iter_selected, scored_text, select
from bodyblocks.inference.vote import VOTE
from bodyblocks.metrics import score_page, summarize
from bodyblocks.training.datasets import gold_convention


def open_mask(rest: np.ndarray, lo: float, hi: float, context: int) -> np.ndarray:
    """The blocks the model runs on: rest strictly between lo and hi, widened by `context` blocks each side."""
    mask = (rest > lo) & (rest < hi)
    if context and mask.any():
        idx = np.flatnonzero(mask)
        wide = np.zeros_like(mask)
        for k in range(-context, context + 1):
            j = idx + k
            wide[j[(j >= 0) & (j < len(mask))]] = True
        mask = wide
    return mask


def forward_cpu(ex: Any, doc: Any) -> tuple[np.ndarray, float]:
    """The model's P(body) of a page and the CPU seconds of its inputs and forward pass."""
    start = time.process_time()
    prepared = ex._prepare_model([doc])
    probs = ex.forward(prepared)[0]
    return probs, time.process_time() - start


def run(ex: Any, source: str, limit: int | None, setting: tuple[float, ...], lo: float, hi: float,
        context: int) -> dict[str, Any]:
    """Both ways on `source`'s test pages."""
    blend, rule = rule_of(setting)
    w, h = blend.model, blend.vote
    convention = gold_convention(source)
    positions, _ = select(source, "test", limit)
    full_scores, cascade_scores = [], []
    differ = blocks = ran = 0
    cpu_full = cpu_cascade = 0.0
    for page in iter_selected(source, positions):
        doc = None if page.meta.get("error") else ex.page_segmenter(page.html)
        if doc is None or not doc.blocks:
            full_scores.append(score_page(page.gold, ""))
            cascade_scores.append(full_scores[-1])
            continue
        prepared = ex.prepare([doc])
        trees, vote = prepared.gbt[0], doc.extra[VOTE]
        model, cpu = forward_cpu(ex, doc)
        cpu_full += cpu
        rest = h * vote + (1.0 - w - h) * trees
        mask = open_mask(rest, lo, hi, context)
        cheap = (rest >= hi).astype(np.float32)
        if mask.any():
            sub = replace(doc, blocks=[b for b, m in zip(doc.blocks, mask, strict=True) if m], extra={})
            part, cpu = forward_cpu(ex, sub)
            cpu_cascade += cpu
            cheap[mask] = part
        blocks += len(mask)
        ran += int(mask.sum())
        texts = []
        for m in (model, cheap):
            p = (w * m + h * vote + (1.0 - w - h) * trees).astype(np.float32)
            texts.append(scored_text(rule.decide(doc, p, "ensemble"), convention))
        differ += texts[0] != texts[1]
        full_scores.append(score_page(page.gold, texts[0]))
        cascade_scores.append(score_page(page.gold, texts[1]) if texts[1] != texts[0] else full_scores[-1])
    n = len(full_scores)
    f, c = summarize(full_scores), summarize(cascade_scores)
    return {"source": source, "pages": n, "differ": differ, "share": ran / max(blocks, 1),
            "full": (f["token_f1"], f["acc@0.90"]), "cascade": (c["token_f1"], c["acc@0.90"]),
            "cpu_full": 1000 * cpu_full / max(n, 1), "cpu_cascade": 1000 * cpu_cascade / max(n, 1)}


def main() -> int:
    ap = arguments(__doc__, pages=60)
    ap.add_argument("--lo", type=float, default=0.1, help="rest at most this: decided non-body")
    ap.add_argument("--hi", type=float, default=0.6, help="rest at least this: decided body")
    ap.add_argument("--context", type=int, default=1, help="neighbours of an open block the model also sees")
    ap.add_argument("--fold", help="a leave-one-source-out fold: its own parts (--models, --trees)")
    ap.add_argument("--models", type=Path, help="fold folders holding model/")
    ap.add_argument("--trees", type=Path, help="fold folders holding gbt/")
    ap.add_argument("--setting", default="0.2,0.2,0.45,0.6", help="blend: model weight, vote weight, threshold, "
                    "container's outer threshold")
    ap.add_argument("--sources", default=",".join(SOURCES), help="comma-separated (without --fold)")
    args = ap.parse_args()
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from bodyblocks.inference.checkpoints import load_extractor
    from bodyblocks.training.tune import write_ensemble_folder

    setting = tuple(float(x) for x in args.setting.split(","))
    limit = None if args.fold else args.pages
    print(f"lo {args.lo}, hi {args.hi}, context {args.context}, setting {setting}")
    print("| source | pages | full | cascade | pages with other text | blocks the model sees | forward ms/page full "
          "→ cascade |\n|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        if args.fold:
            write_ensemble_folder(tmp, args.models / args.fold / "model", args.trees / args.fold / "gbt",
                                  {**rule_meta(setting), "heuristic": setting[1]})
            ex, sources = load_extractor("ensemble", tmp, device="cpu", threads=1), [args.fold]
        else:
            ex, sources = load_extractor("ensemble", threads=1), args.sources.split(",")
        for source in sources:
            r = run(ex, source, limit, setting, args.lo, args.hi, args.context)
            print(f"| {r['source']} | {r['pages']} | {r['full'][0]:.4f} / {r['full'][1]:.4f} | {r['cascade'][0]:.4f}"
                  f" / {r['cascade'][1]:.4f} | {r['differ']} | {r['share']:.0%} | {r['cpu_full']:.2f} → "
                  f"{r['cpu_cascade']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
