"""What else the ensemble could do with the inputs it has, measured on the validation pages: a record of
changes tried for the wcxb-dev margin (issue 5) and why none was shipped.

The shipped ensemble (checkpoints/ensemble) blends the Transformer's P(body), the trees' P(body) and the
heuristic's vote. Each variant below changes one thing and is scored exactly as `bodyblocks ensemble`
tunes the shipped one: the Transformer's validation probabilities are fixed (the ensemble's, or --model); the
trees are retrained with the shipped checkpoints/gbt settings (GbtConfig in its config.json, the same seed,
early-stopped on validation) plus the variant's change; then every blend (w, h) of EnsembleConfig's weights x
vote_weights and its decision rule are tuned on the 354 validation pages (training.tune.tune_rule) and
the best mean per-page character F1 is reported, with the trees alone and per dataset. No test page is read.

Variants:
  (first row)       the shipped trees themselves (checkpoints/gbt), blended as the shipped ensemble is
  shipped           the shipped trees' settings, retrained here (a check that retraining reproduces them)
  vote-input        the vote as an input of the trees: the block's vote, its neighbours' votes, and the
                    page's voted share of characters and of blocks (the trees could learn where the
                    heuristic is unreliable instead of one fixed weight)
  vote-containers   vote-input plus the voted share of the characters under the block's parent, grandparent
                    and great-grandparent tag paths
  page-weights      each block weighted 1/sqrt(n), n the blocks on its page: a page weighs sqrt(n), not n,
                    closer to the per-page evaluation, where a long page's navigation blocks count little
  neighbours-2      block_features of two blocks either side instead of one
  bigger-trees      63 leaves, 20 blocks per leaf, learning rate 0.05, at most 800 iterations (not 400)
  path-smoothing a  after the shipped trees' blend, each block's P moved a share `a` toward the text-weighted mean P
                    of the blocks with its tag path (groups of 3 or more): grids of cards, table rows and
                    list items decided together
  --second MODEL    a second Transformer (e.g. the no-text model of benchmarks/configs/notext.yaml) in place of the
                    first in the blend with the shipped trees, and beside it: a * first + b * second + h * vote
                    + (1 - a - b - h) * trees, every (a, b, h) of the grid

    bodyblocks train benchmarks/configs/notext.yaml                        # runs/notext/best, ~45 min
    nice -n 5 python -m benchmarks.ensemble_experiments --second runs/notext/best   # ~20 min on 2 cores
(docs/ensemble_experiments.md was made with --second runs/notext_s3/best: the same weights, bit for bit)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.config import EnsembleConfig, GbtConfig
from bodyblocks.files import REPO_ROOT
from bodyblocks.inference.blocks import Blend
from bodyblocks.inference.checkpoints import read_ensemble
from bodyblocks.inference.gbt import GbtModel, gbt_features
from bodyblocks.inference.model import read_checkpoint
from bodyblocks.inference.vote import vote_on_blocks
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.data import load_pages, recorded_data
from bodyblocks.training.gbt import fit_sklearn
from bodyblocks.training.tune import (
    best_weights,
    blend_scores,
    model_probabilities,
    page_f1,
    page_items,
    tune_rule,
    validation_html,
)

GRID = EnsembleConfig()  # the blends `bodyblocks ensemble` tries: w in GRID.weights, h in GRID.vote_weights
TREE_VARIANTS = ("shipped", "vote-input", "vote-containers", "page-weights", "neighbours-2", "bigger-trees")
SMOOTHING = (0.1, 0.2, 0.3, 0.5)


def _vote_job(job: tuple[str, list[str], bytes | str]) -> np.ndarray:
    return vote_on_blocks(*job)


def vote_columns(blocks: Sequence[Any], vote: np.ndarray, containers: bool) -> np.ndarray:
    """The vote-input columns (and with `containers`, the voted shares under 1-3 ancestor paths)."""
    n = len(blocks)
    chars = np.array([max(b.text_len, 0) for b in blocks], float)
    share = float((chars * vote).sum() / max(chars.sum(), 1.0))
    prev = np.concatenate(([np.nan], vote[:-1]))[:n]
    nxt = np.concatenate((vote[1:], [np.nan]))[:n]
    cols = [vote, prev, nxt, np.full(n, share), np.full(n, vote.mean() if n else 0.0)]
    if containers:
        total: dict[str, float] = defaultdict(float)
        voted: dict[str, float] = defaultdict(float)
        segs = [b.tag_path.split("/") for b in blocks]
        for s, c, v in zip(segs, chars, vote, strict=True):
            for i in range(len(s)):
                key = "/".join(s[: i + 1])
                total[key] += c
                voted[key] += c * v
        for k in (1, 2, 3):
            keys = ["/".join(s[: max(len(s) - k, 1)]) for s in segs]
            cols.append(np.array([voted[key] / max(total[key], 1.0) for key in keys]))
    return np.column_stack(cols)


def tree_inputs(pages: Sequence[CachedPage], votes: Sequence[np.ndarray], variant: str,
                cfg: GbtConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, sample weights) of the variant's trees."""
    xs, ws = [], []
    for cp, vote in zip(pages, votes, strict=True):
        x = gbt_features(cp.blocks, cfg)
        if variant.startswith("vote"):
            x = np.hstack([x, vote_columns(cp.blocks, vote.astype(float), variant == "vote-containers")])
        xs.append(x)
        n = len(cp.blocks)
        ws.append(np.full(n, 1.0 / np.sqrt(n) if variant == "page-weights" else 1.0))
    w = np.concatenate(ws)
    return np.concatenate(xs), np.concatenate([np.asarray(cp.labels) for cp in pages]), w / w.mean()


def fit_trees(variant: str, shipped: GbtConfig, train: Sequence[CachedPage], val: Sequence[CachedPage],
              votes_tr: Sequence[np.ndarray], votes_va: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Validation P(body) per page of the variant's trees (training.gbt.fit_sklearn), and their boosting
    iterations."""
    changes: dict[str, Any] = {"neighbours-2": {"neighbours": 2},
                               "bigger-trees": {"max_leaf_nodes": 63, "min_samples_leaf": 20, "learning_rate": 0.05,
                                                "max_iter": 2 * shipped.max_iter}}.get(variant, {})
    cfg = replace(shipped, **changes)
    x, y, w = tree_inputs(train, votes_tr, variant, cfg)
    xv, yv, wv = tree_inputs(val, votes_va, variant, cfg)
    weighted = variant == "page-weights"  # the others unweighted, exactly as the shipped trees were fitted
    clf = fit_sklearn(x, y, xv, yv, cfg, w if weighted else None, wv if weighted else None)
    p = clf.predict_proba(xv)[:, 1].astype(np.float32)
    return np.split(p, np.cumsum([len(cp.blocks) for cp in val])[:-1]), int(clf.n_iter_)


def per_dataset(val: Sequence[CachedPage], probs: Sequence[np.ndarray], t: float, r: float) -> dict[str, float]:
    """Mean per-page character F1 by dataset under the rule (t, r), as tune_rule scores it."""
    out: dict[str, list[float]] = defaultdict(list)
    for cp, (lab, w, p) in zip(val, page_items(val, probs), strict=True):
        keep = p >= t
        out[cp.dataset].append(page_f1(lab, w, keep if keep.any() else p >= r))
    return {k: float(np.mean(v)) for k, v in sorted(out.items())}


def best_blend(val: Sequence[CachedPage], p_model: Sequence[np.ndarray], p_gbt: Sequence[np.ndarray],
               votes: Sequence[np.ndarray]) -> dict[str, Any]:
    """The best (w, h) and rule on validation, as training.tune.tune_ensemble chooses them."""
    scores = blend_scores(val, p_model, p_gbt, votes, GRID)
    w, h = best_weights(scores)
    t, r, score = scores[(w, h)]
    return {"weight": w, "heuristic": h, "threshold": t, "rescue": r, "val_page_f1": score,
            "by_dataset": per_dataset(val, Blend(w, h)(p_model, p_gbt, votes), t, r)}


def path_smoothing(blocks: Sequence[Any], p: np.ndarray, a: float) -> np.ndarray:
    """P moved a share `a` toward the text-weighted mean P of the blocks sharing its tag path (3 or more)."""
    if not len(p):
        return p
    ids: dict[str, int] = {}
    g = np.array([ids.setdefault(b.tag_path, len(ids)) for b in blocks])
    w = np.array([max(b.text_len, 1) for b in blocks], float)
    mean = np.bincount(g, p * w) / np.bincount(g, w)
    return np.where(np.bincount(g)[g] >= 3, (1 - a) * p + a * mean[g], p).astype(np.float32)


def second_model(path: Path, val: Sequence[CachedPage], p_model: Sequence[np.ndarray],
                 p_gbt: Sequence[np.ndarray], votes: Sequence[np.ndarray]) -> dict[str, Any]:
    """A second Transformer alone, in place of the first in the blend, and beside it: per block
    a * first + b * second + h * vote + (1 - a - b - h) * trees, every (a, b, h) on the GRID.weights grid."""
    p_two = model_probabilities(path, val)
    t, r, alone = tune_rule(val, p_two)
    swap = {"model_alone": alone, **best_blend(val, p_two, p_gbt, votes)}
    scores = {}
    for h in GRID.vote_weights:
        for a in GRID.weights:
            for b in GRID.weights:
                if a + b + h <= 1.0 + 1e-9:
                    probs = [(a * x + b * y + h * v + (1 - a - b - h) * g).astype(np.float32)
                             for x, y, v, g in zip(p_model, p_two, votes, p_gbt, strict=True)]
                    scores[(a, b, h)] = (tune_rule(val, probs), probs)
    a, b, h = max(scores, key=lambda k: (scores[k][0][2], -k[2], -abs(k[0] + k[1] - 0.5)))  # tune_ensemble's ties
    (t, r, score), probs = scores[(a, b, h)]
    both = {"first": a, "second": b, "heuristic": h, "threshold": t, "rescue": r, "val_page_f1": score,
            "by_dataset": per_dataset(val, probs, t, r)}
    print(f"second model {path}: alone {alone:.4f}, in place of the first {swap['val_page_f1']:.4f}, "
          f"beside it {score:.4f} ({a} / {b} / {h})", flush=True)
    return {"path": os.path.relpath(Path(path).resolve(), REPO_ROOT), "in_place": swap, "beside": both}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ensemble", type=Path, default=REPO_ROOT / "checkpoints" / "ensemble")
    ap.add_argument("--model", type=Path, help="the Transformer checkpoint (default: the ensemble's)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "ensemble_experiments.md")
    ap.add_argument("--second", type=Path, help="a second Transformer checkpoint: scored in place of the first "
                    "and beside it (three-way blend) with the shipped trees' settings")
    ap.add_argument("--only", nargs="*", choices=TREE_VARIANTS, help="tree variants to run (default: all)")
    args = ap.parse_args()
    t0 = time.time()
    meta = read_ensemble(args.ensemble)
    model = args.model or meta["model_path"]
    data = recorded_data(read_checkpoint(model))
    shipped = GbtConfig(**json.loads((meta["gbt_path"] / "config.json").read_text(encoding="utf-8"))["gbt"])
    splits = load_pages(data)
    train, val = splits["train"], splits["val"]
    p_model = model_probabilities(model, val)
    pages = [*train, *val]
    html = validation_html(pages, data)
    with Pool(2) as pool:
        votes = pool.map(_vote_job, [(f"{cp.dataset}/{cp.id}", [b.text for b in cp.blocks],
                                      html[(cp.dataset, cp.id)]) for cp in pages], chunksize=16)
    del html
    votes_tr, votes_va = votes[: len(train)], votes[len(train):]
    print(f"{len(train)} train and {len(val)} validation pages, votes made ({time.time() - t0:.0f} s)", flush=True)

    results: dict[str, Any] = {"command": " ".join(["python -m benchmarks.ensemble_experiments", *sys.argv[1:]]),
                               "model": os.path.relpath(Path(model).resolve(), REPO_ROOT), "train_pages": len(train),
                               "val_pages": len(val), "recorded": meta.get("metrics", {}).get("val_page_f1"),
                               "trees": {}, "smoothing": {}}
    trees = GbtModel.load(meta["gbt_path"])  # the shipped trees themselves: the base of smoothing and --second
    p_shipped = [trees.page_probabilities(cp.blocks).astype(np.float32) for cp in val]
    row = {"trees_alone": tune_rule(val, p_shipped)[2], "iterations": trees.n_trees,
           **best_blend(val, p_model, p_shipped, votes_va)}
    results["trees"]["checkpoints/gbt as shipped"] = row
    print(f"shipped trees: alone {row['trees_alone']:.4f}, ensemble {row['val_page_f1']:.4f} "
          f"(recorded in the ensemble's config.json: {results['recorded']})", flush=True)
    shipped_probs = Blend(row["weight"], row["heuristic"])(p_model, p_shipped, votes_va)
    if args.second:
        results["second"] = second_model(args.second, val, p_model, p_shipped, votes_va)
    for variant in args.only or TREE_VARIANTS:
        p_gbt, iters = fit_trees(variant, shipped, train, val, votes_tr, votes_va)
        t, r, alone = tune_rule(val, p_gbt)
        row = {"trees_alone": alone, "iterations": iters, **best_blend(val, p_model, p_gbt, votes_va)}
        results["trees"][variant] = row
        print(f"{variant}: trees alone {alone:.4f}, ensemble {row['val_page_f1']:.4f} "
              f"(w {row['weight']}, h {row['heuristic']}) {time.time() - t0:.0f} s", flush=True)
    for a in SMOOTHING:
        probs = [path_smoothing(cp.blocks, p, a) for cp, p in zip(val, shipped_probs, strict=True)]
        t, r, score = tune_rule(val, probs)
        results["smoothing"][str(a)] = {"val_page_f1": score, "threshold": t, "rescue": r,
                                        "by_dataset": per_dataset(val, probs, t, r)}
        print(f"path-smoothing {a}: {score:.4f}", flush=True)
    write_report(args.out, results)
    print(f"wrote {args.out} ({time.time() - t0:.0f} s)")


def write_report(out: Path, results: dict[str, Any]) -> None:
    """docs/ensemble_experiments.md and .json."""
    rows = [(name, r, f"{r['weight']} / {r['heuristic']}") for name, r in results["trees"].items()]
    rows += [(f"path-smoothing {a}", r, "as shipped") for a, r in results["smoothing"].items()]
    if "second" in results:
        sec = results["second"]
        swap, both = sec["in_place"], sec["beside"]
        rows.append((f"{sec['path']} in place of the Transformer", {**swap, "trees_alone": None},
                     f"{swap['weight']} / {swap['heuristic']}"))
        rows.append((f"{sec['path']} beside it", both,
                     f"{both['first']} + {both['second']} / {both['heuristic']}"))
    datasets = sorted({d for _, r, _ in rows for d in r["by_dataset"]})
    lines = ["# Ensemble variants on the validation pages", "",
             f"Generated by `nice -n 5 {results['command']}` (do not edit by hand); its docstring describes "
             "each variant. Mean per-page character F1 of the kept blocks on the "
             f"{results['val_pages']} validation pages (trees trained on {results['train_pages']} train pages; "
             f"the Transformer: {results['model']}), each row with its own best blend and decision rule, as "
             "`bodyblocks ensemble` tunes them (w: the Transformer's weight, h: the vote's; trees: the rest). "
             "No test page is read. The first row scores the shipped trees themselves; "
             f"the ensemble's config.json records {results['recorded']} for the shipped blend.", "",
             "| variant | trees alone | ensemble | w / h | " + " | ".join(datasets) + " |",
             "|---|---:|---:|---|" + "---:|" * len(datasets)]
    for name, r, wh in rows:
        alone = f"{r['trees_alone']:.4f}" if r.get("trees_alone") is not None else ""
        lines.append(f"| {name} | {alone} | {r['val_page_f1']:.4f} | {wh} | "
                     + " | ".join(f"{r['by_dataset'].get(d, float('nan')):.3f}" for d in datasets) + " |")
    lines += ["", f"The same {results['val_pages']} pages early-stop the trees, choose each row's blend and rule, "
              "and score it: differences of a few thousandths are within what one page more or less right moves "
              f"(one of {results['val_pages']} pages is {1 / results['val_pages']:.4f} of the mean)."]
    if "second" in results:
        sec = results["second"]
        lines += ["", f"`{sec['path']}` alone: {sec['in_place']['model_alone']:.4f}. Beside the first "
                  "Transformer the weights are `first + second / h` (w for the first, the second's, the vote's); "
                  "that row searches every (a, b, h) of the grid, a superset of the two-way blends, so part of its "
                  "lead is selection on these same pages."]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
