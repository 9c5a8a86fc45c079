"""What transfers to unseen sources: the boosted trees' inputs ablated leave-one-source-out.

    python -m benchmarks.transfer                                   # every variant, every fold
    python -m benchmarks.transfer --variants base notags+context --folds wcxb-dev dragnet

For each fold S and each input variant, the trees (configs/default.yaml's gbt settings) are fitted on the
other sources' train pages, early-stopped and their decision rule tuned on the other sources' validation
pages, and scored on S's test pages (data/splits) from the cached blocks: token F1 and accuracy at
Levenshtein ratio >= 0.9 of the kept blocks' text against the gold text. This is the trees alone, without
the Transformer or the ensemble (the issue allows ablations on the trees); benchmarks/loso.py runs whole
extractors. Results go to runs/transfer/results.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bodyblocks.config import DataConfig, GbtConfig, load_config
from bodyblocks.context import context_features
from bodyblocks.files import REPO_ROOT, datasets_root, write_json
from bodyblocks.inference.decision import keep_mask
from bodyblocks.inference.gbt import gbt_features
from bodyblocks.metrics import levenshtein_ratio, token_prf
from bodyblocks.training.cache import CachedPage, load_cached
from bodyblocks.training.data import load_pages
from bodyblocks.training.datasets import resolve_dataset
from bodyblocks.training.gbt import fit_sklearn, from_sklearn
from bodyblocks.training.tune import tune_rule

SOURCES = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")

Features = Callable[[CachedPage], np.ndarray]


def variant(name: str, gbt: GbtConfig) -> Features:
    """The feature function of a variant name: base | notags, each optionally +context."""
    tags = not name.startswith("notags")
    cfg = gbt if tags else dataclasses.replace(gbt, tag_buckets=0)
    ctx = "+context" in name

    def features(cp: CachedPage) -> np.ndarray:
        x = gbt_features(cp.blocks, cfg)
        return np.concatenate((x, context_features(cp.blocks).astype(np.float64)), axis=1) if ctx else x

    return features


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def test_pages(source: str, root: Path) -> list[CachedPage]:
    """S's test pages (project split) that have gold text, blocks or not."""
    return [cp for cp in load_cached(resolve_dataset(root / source)) if cp.split == "test" and cp.has_gold]


def score(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], threshold: float, rescue: float
          ) -> dict[str, float]:
    """Token F1 / P / R and acc@0.9 of the kept blocks' text against gold, per-page means."""
    f1s, ps, rs, ratios = [], [], [], []
    for cp, p in zip(pages, probs, strict=True):
        keep = keep_mask(p, threshold, rescue) if len(p) else np.zeros(0, bool)
        pred = "\n".join(b.text for b, k in zip(cp.blocks, keep, strict=True) if k)
        prec, rec, f1 = token_prf(cp.gold or "", pred)
        f1s.append(f1)
        ps.append(prec)
        rs.append(rec)
        ratios.append(levenshtein_ratio(cp.gold or "", pred))
    return {"token_f1": float(np.mean(f1s)), "token_precision": float(np.mean(ps)),
            "token_recall": float(np.mean(rs)), "acc@0.90": float(np.mean(np.array(ratios) >= 0.9)),
            "pages": len(pages)}


def main_container(blocks: Sequence, keep: np.ndarray, share: float) -> str | None:
    """The deepest element (xpath) holding at least `share` of the kept blocks' characters."""
    chars = np.array([b.text_len for b in blocks], float)
    total = float(chars[keep].sum())
    if total <= 0:
        return None
    agg: dict[str, float] = {}
    for b, c in zip((b for b, k in zip(blocks, keep, strict=True) if k), chars[keep], strict=True):
        parts = b.xpath.split("/")
        for j in range(2, len(parts)):
            key = "/".join(parts[:j])
            agg[key] = agg.get(key, 0.0) + c
    best = [x for x, c in agg.items() if c >= share * total]
    return max(best, key=lambda x: x.count("/")) if best else None


def container_keep(blocks: Sequence, p: np.ndarray, rule: tuple[float, float, float, float, float]) -> np.ndarray:
    """Keep by threshold and rescue, then inside the main container of what is kept keep blocks at or above
    t_in, outside it only those at or above t_out."""
    t, r, share, t_in, t_out = rule
    keep = keep_mask(p, t, r)
    main = main_container(blocks, keep, share)
    if main is None:
        return keep
    inside = np.array([b.xpath.startswith(main + "/") for b in blocks])
    return (inside & (p >= t_in)) | (~inside & (p >= t_out))


def tune_container(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], t: float, r: float
                   ) -> tuple[tuple[float, float, float, float, float], float]:
    """The container rule with the best mean per-page character F1 (tune.page_f1) on validation."""
    from bodyblocks.training.tune import page_f1

    items = [(cp, np.asarray(cp.labels), np.array([b.text_len for b in cp.blocks], float), p)
             for cp, p in zip(pages, probs, strict=True) if len(p)]
    best = ((t, r, 1.0, t, t), -1.0)
    for share in (0.6, 0.8, 0.95):
        mains = [main_container(cp.blocks, keep_mask(p, t, r), share) for cp, _, _, p in items]
        inside = [np.array([b.xpath.startswith(m + "/") for b in cp.blocks]) if m else None
                  for (cp, _, _, _), m in zip(items, mains, strict=True)]
        for t_in in (0.02, 0.05, 0.1, 0.2, 0.3, t):
            for t_out in sorted({t, 0.6, 0.7, 0.8, 0.9, 0.97}):
                if t_in > t or t_out < t:
                    continue
                scores = []
                for (_, lab, w, p), ins in zip(items, inside, strict=True):
                    keep = keep_mask(p, t, r) if ins is None else (ins & (p >= t_in)) | (~ins & (p >= t_out))
                    scores.append(page_f1(lab, w, keep))
                score = float(np.mean(scores))
                if score > best[1] + 1e-9:
                    best = ((t, r, share, t_in, t_out), score)
    return best


def score_keep(pages: Sequence[CachedPage], keeps: Sequence[np.ndarray]) -> dict[str, float]:
    """score() from kept-block masks."""
    f1s, ps, rs, ratios = [], [], [], []
    for cp, keep in zip(pages, keeps, strict=True):
        pred = "\n".join(b.text for b, k in zip(cp.blocks, keep, strict=True) if k)
        prec, rec, f1 = token_prf(cp.gold or "", pred)
        f1s.append(f1)
        ps.append(prec)
        rs.append(rec)
        ratios.append(levenshtein_ratio(cp.gold or "", pred))
    return {"token_f1": float(np.mean(f1s)), "token_precision": float(np.mean(ps)),
            "token_recall": float(np.mean(rs)), "acc@0.90": float(np.mean(np.array(ratios) >= 0.9)),
            "pages": len(pages)}


def matrix(pages: Sequence[CachedPage], feats: Features, memo: dict[tuple[str, str], np.ndarray]
           ) -> list[np.ndarray]:
    out = []
    for cp in pages:
        key = (cp.dataset, cp.id)
        if key not in memo:
            memo[key] = feats(cp)
        out.append(memo[key])
    return out


def run_fold(source: str, splits: dict[str, dict[str, list[CachedPage]]], tests: list[CachedPage],
             feats: Features, gbt: GbtConfig, memo: dict[tuple[str, str], np.ndarray]) -> dict[str, float]:
    train = [cp for s, sp in splits.items() if s != source for cp in sp["train"]]
    val = [cp for s, sp in splits.items() if s != source for cp in sp["val"]]
    x = np.concatenate(matrix(train, feats, memo))
    y = np.concatenate([np.asarray(cp.labels) for cp in train])
    xv_pages = matrix(val, feats, memo)
    xv = np.concatenate(xv_pages)
    yv = np.concatenate([np.asarray(cp.labels) for cp in val])
    model = from_sklearn(fit_sklearn(x, y, xv, yv, gbt), gbt)
    pv = [model.predict_proba(m) for m in xv_pages]
    threshold, rescue, val_f1 = tune_rule(val, pv)
    pt = [model.predict_proba(m) if len(m) else np.zeros(0) for m in matrix(tests, feats, memo)]
    out = score(tests, pt, threshold, rescue)
    out.update({"threshold": threshold, "rescue": rescue, "val_page_f1": val_f1, "n_trees": model.n_trees})
    rule, val_c = tune_container(val, pv, threshold, rescue)
    keeps = [container_keep(cp.blocks, p, rule) if len(p) else np.zeros(0, bool)
             for cp, p in zip(tests, pt, strict=True)]
    out["container"] = {**score_keep(tests, keeps), "rule": rule, "val_page_f1": val_c}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", nargs="+", default=["base", "notags", "base+context", "notags+context"])
    ap.add_argument("--folds", nargs="+", default=list(SOURCES), choices=SOURCES)
    ap.add_argument("--out", default=str(REPO_ROOT / "runs" / "transfer" / "results.json"))
    args = ap.parse_args(argv)
    root = datasets_root()
    gbt = load_config(REPO_ROOT / "configs" / "default.yaml").gbt
    splits = {s: load_pages(DataConfig(root=str(root), datasets=[s])) for s in SOURCES}
    tests = {s: test_pages(s, root) for s in args.folds}
    out_path = Path(args.out)
    results: dict[str, dict[str, dict[str, float]]] = json.loads(out_path.read_text()) if out_path.exists() else {}
    for name in args.variants:
        feats, memo = variant(name, gbt), {}
        for source in args.folds:
            start = time.monotonic()
            res = run_fold(source, splits, tests[source], feats, gbt, memo)
            res["seconds"] = round(time.monotonic() - start, 1)
            results.setdefault(name, {})[source] = res
            write_json(out_path, results)
            log(f"{name} / {source}: token F1 {res['token_f1']:.3f}, acc@0.9 {res['acc@0.90']:.3f} "
                f"(P {res['token_precision']:.3f} R {res['token_recall']:.3f}, {res['seconds']} s)")
    print(table(results))
    return 0


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """Token F1 / acc@0.9 per fold and their mean, one row per variant."""
    lines = ["| variant | " + " | ".join(SOURCES) + " | mean |", "|---" * (len(SOURCES) + 2) + "|"]
    rows = dict(results)
    for name, folds in results.items():
        if all("container" in folds[s] for s in folds):
            rows[name + " (container rule)"] = {s: folds[s]["container"] for s in folds}
    for name, folds in rows.items():
        cells = [f"{folds[s]['token_f1']:.3f} / {folds[s]['acc@0.90']:.3f}" if s in folds else "" for s in SOURCES]
        done = [folds[s] for s in SOURCES if s in folds]
        mean = (f"{np.mean([r['token_f1'] for r in done]):.3f} / {np.mean([r['acc@0.90'] for r in done]):.3f}"
                if len(done) == len(SOURCES) else "")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {mean} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
