"""An ensemble blend tuned on out-of-source predictions: the weights that hold on sources a part never saw.

    python -m benchmarks.cross_source                       # every LOSO fold, then the page (after benchmarks.loso)
    python -m benchmarks.cross_source --ship checkpoints/ensemble   # the shipped blend from all six sources

The ensemble's blend (the model's weight, the heuristic vote's, the trees' the rest) and decision rule are
tuned by `bodyblocks ensemble` on validation pages of the sources its parts were trained on, where each part
looks better than it does on a new site, and the blend leans on whichever part fits those sources best.
Here each source T's validation pages are scored by the LOSO fold-T parts (runs/loso/T/: trained without T),
so every prediction the blend is tuned on is an out-of-source one.

  fold S:   the blend and rule are tuned on the out-of-source predictions of the other sources' validation
            pages (T != S), then applied to fold S's own parts (runs/loso/S/model, gbt) and scored on S's test
            pages -> runs/loso/S/ensemble-xs/, eval-ensemble-xs.json. No page of S is used in the tuning;
            the fold-T parts that scored T's pages were trained with S among their sources, so S reaches the
            three tuned numbers only through them.
  --ship:   tuned on the out-of-source predictions of all six sources' validation pages, and written into
            the ensemble folder given (its parts: the shipped model and trees).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.loso import SOURCES, log
from bodyblocks.config import DataConfig, load_config
from bodyblocks.evaluation.evaluate import EvalConfig, evaluate
from bodyblocks.files import REPO_ROOT, datasets_root, write_json
from bodyblocks.inference.checkpoints import read_meta
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.data import load_pages
from bodyblocks.training.tune import (
    choose_blend,
    gbt_probabilities,
    model_probabilities,
    validation_votes,
    write_ensemble_folder,
)

Scored = tuple[list[CachedPage], list[np.ndarray], list[np.ndarray], list[np.ndarray]]


def out_of_source(source: str, root: Path, folds: Path, cache: Path) -> Scored:
    """Source T's validation pages with the fold-T model's and trees' P(body) and the heuristic's vote
    (cached in runs/loso/T/xs-val.npz: the parts do not change)."""
    data = DataConfig(root=str(root), datasets=[source])
    val = load_pages(data)["val"]
    if cache.exists():
        z = np.load(cache, allow_pickle=False)
        split = np.cumsum([len(cp.blocks) for cp in val])[:-1]
        if int(z["n"]) == sum(len(cp.blocks) for cp in val):
            return val, np.split(z["model"], split), np.split(z["gbt"], split), np.split(z["vote"], split)
    fold = folds / source
    p_model = model_probabilities(fold / "model", val)
    p_gbt = gbt_probabilities(fold / "gbt", val)
    votes = validation_votes(val, data)
    np.savez(cache, n=sum(len(cp.blocks) for cp in val), model=np.concatenate(p_model),
             gbt=np.concatenate(p_gbt), vote=np.concatenate(votes))
    return val, p_model, p_gbt, votes


def tune_blend(parts: list[Scored]) -> dict[str, Any]:
    """The blend, rule and container step with the best mean per-page F1 over the pooled pages (tune.choose_blend,
    as `bodyblocks ensemble` chooses them), as an ensemble folder's settings."""
    val = [cp for p in parts for cp in p[0]]
    p_model, p_gbt, votes = ([x for p in parts for x in p[k]] for k in (1, 2, 3))
    chosen = choose_blend(val, p_model, p_gbt, votes, load_config(REPO_ROOT / "configs" / "default.yaml").ensemble)
    scores = chosen.pop("scores")
    chosen["metrics"] = {"val_page_f1": chosen.pop("val_page_f1"),
                         "val_page_f1_without_container": chosen.pop("without_container"), "val_pages": len(val),
                         "tuned_on": "out-of-source predictions (benchmarks/cross_source.py)",
                         "by_weight": {f"{w}/{h}": s[2] for (w, h), s in scores.items()}}
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folds-dir", type=Path, default=REPO_ROOT / "runs" / "loso")
    ap.add_argument("--folds", nargs="+", choices=SOURCES, default=list(SOURCES))
    ap.add_argument("--ship", type=Path, default=None, help="write the all-source blend into this ensemble folder")
    args = ap.parse_args(argv)
    root = datasets_root()
    if root is None:
        raise SystemExit("no datasets folder (set BODYBLOCKS_DATASETS)")
    import torch

    torch.set_num_threads(1)
    scored = {}
    for s in SOURCES:
        log(f"{s}: out-of-source predictions on its validation pages")
        scored[s] = out_of_source(s, root, args.folds_dir, args.folds_dir / s / "xs-val.npz")
    if args.ship:
        old = read_meta(args.ship)
        settings = tune_blend(list(scored.values()))
        write_ensemble_folder(args.ship, args.ship / old["model"], args.ship / old["gbt"], settings)
        print(json.dumps({k: v for k, v in settings.items() if k != "metrics"}))
        return 0
    for s in args.folds:
        fold = args.folds_dir / s
        settings = tune_blend([scored[t] for t in SOURCES if t != s])
        write_ensemble_folder(fold / "ensemble-xs", fold / "model", fold / "gbt", settings)
        log(f"{s}: blend {settings['weight']}/{settings['heuristic']}, rule {settings['threshold']}/"
            f"{settings['rescue']}/{settings['container']}; evaluating")
        cfg = EvalConfig([str(root / s)], ["ensemble"], split="test", workers=1,
                         extractor_opts={"ensemble": {"checkpoint": str(fold / "ensemble-xs"), "device": "cpu",
                                                      "threads": 1}})
        report, _ = evaluate(cfg)
        write_json(fold / "eval-ensemble-xs.json", {"summary": report["summary"], "selection": report["selection"],
                                                     "failures": len(report["failures"])})
        row = next(r for r in report["summary"] if r["dataset"] != "*" and r["lang"] == "*")
        log(f"{s}: token F1 {row['token_f1']:.3f}, acc@0.9 {row['acc@0.90']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
