"""Subcommands over datasets: evaluate, and data (synth, split, cache, oracle, stats)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from bodyblocks.cli.checks import check_peers, seconds, whole
from bodyblocks.cli.helptext import RegistryHelp

if TYPE_CHECKING:
    from bodyblocks.evaluation.evaluate import PageResult


# --- evaluate (evaluation/) -----------------------------------------------------------------------------------
def add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score extractors on datasets: table, JSON, per-page CSV, plot",
                       formatter_class=RegistryHelp)
    p.add_argument("datasets", nargs="+", metavar="DATASET_DIR",
                   help="dataset folders: a path (from the current folder), else a name under the datasets root "
                        "($BODYBLOCKS_DATASETS, else ../shared/datasets beside the repository)")
    p.add_argument("--extractor", nargs="+", required=True, metavar="NAME",
                   help="one or more of: {extractors} (ensemble is the shipped default)")
    p.add_argument("--split", default=None, help="evaluate one split only (e.g. test); default: all pages")
    p.add_argument("--limit", type=whole(1), default=None, help="at most N pages per dataset, evenly spread")
    p.add_argument("--workers", type=whole(0, " (0: in this process, no time limit)"), default=1,
                   help="extraction processes (0: in this process, no time limit)")
    p.add_argument("--page-timeout", type=seconds, default=60.0, help="seconds per page and extractor")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint folder of the one trained extractor asked for (model, gbt or ensemble)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report JSON here")
    p.add_argument("--out", default=None, metavar="DIR", help="write report.json, pages.csv, accuracy.png, report.md")
    p.add_argument("--by-lang", action="store_true", help="also print the per-language table")
    p.add_argument("--headline", choices=("with", "without", "both"), default="with",
                   help="each tool's headline and byline put back where a source's gold holds them (with), the body "
                        "alone (without), or both (rows NAME and NAME:body)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run_evaluate)


def _run_evaluate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bodyblocks.evaluation.evaluate import EvalConfig, evaluate
    from bodyblocks.evaluation.report import format_table, write_outputs
    from bodyblocks.loading.registry import TRAINED

    trained = [n for n in args.extractor if n in TRAINED]
    if args.checkpoint and len(trained) != 1:
        raise ValueError("--checkpoint needs exactly one of model, gbt, ensemble among the extractors")
    opts = {trained[0]: {"checkpoint": args.checkpoint}} if args.checkpoint else {}
    check_peers(args.extractor)  # a peer not installed: one line now, not a failed run after the bar started
    cfg = EvalConfig(list(args.datasets), list(args.extractor), args.split, args.limit, args.workers,
                     args.page_timeout, opts, headline=args.headline)
    report, results = evaluate(cfg, progress=lambda msg: print(msg, file=sys.stderr), bar=not args.no_progress)
    for name, note in report["selection"].items():
        if note.get("split_source"):
            print(f"{name}: split {note['split']} from {note['split_source']}", file=sys.stderr)
    _warn_without_gold(results)
    print(format_table(report["summary"]))
    if args.by_lang:
        print()
        print(format_table(report["summary"], by_lang=True))
    command = "bodyblocks " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["evaluate"] else None
    out = Path(args.out) if args.out else None
    for path in write_outputs(report, results, out, Path(args.json) if args.json else None, command):
        print(f"wrote {path}", file=sys.stderr)
    print(f"{len(report['failures'])} page failures recorded", file=sys.stderr)
    return 0


def _warn_without_gold(results: list[PageResult]) -> None:
    """One line per dataset with pages that have no gold text (none, or empty): they are not scored, and a dataset
    without any gives a table of dashes."""
    pages: dict[str, set[str]] = {}
    bare: dict[str, set[str]] = {}
    for r in results:
        pages.setdefault(r.dataset, set()).add(r.page_id)
        if not r.score.has_gold:
            bare.setdefault(r.dataset, set()).add(r.page_id)
    for name, ids in sorted(bare.items()):
        some = ", ".join(sorted(ids)[:3]) + (", ..." if len(ids) > 3 else "")
        said = f"{len(ids)} of its {len(pages[name])} pages"
        what = "nothing is scored" if len(ids) == len(pages[name]) else "they are not scored"
        print(f"bodyblocks evaluate: warning: {name}: {said} have no gold text ({some}): {what} (the gold: the "
              "file pages.jsonl's `gold` names, or NAME.txt beside NAME.html in a plain folder)", file=sys.stderr)


# --- end evaluate ---------------------------------------------------------------------------------------------


# --- data (training/: synth, datasets, splits, cache, oracle) -------------------------------------------------
def add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="datasets: synthetic corpus, splits, processed cache, oracle, statistics")
    dsub = p.add_subparsers(dest="data_command", required=True, help="what to do")
    s = dsub.add_parser("synth", help="write a synthetic Chinese corpus in the shared dataset layout")
    s.add_argument("--out", required=True, help="folder to create")
    s.add_argument("--pages", type=int, default=300, help="pages to write (300)")
    s.add_argument("--seed", type=int, default=0, help="seed of the generator: the same seed, the same corpus")
    s.set_defaults(handler=_run_data_synth)
    for name, helptext, run in (
        ("split", "write grouped train/val/test id lists under data/splits", _run_data_split),
        ("cache", "build the processed cache (blocks, features, labels, scores)", _run_data_cache),
        ("oracle", "write the body-labelled blocks of every gold page and score them", _run_data_oracle),
        ("stats", "pages, blocks, body share, languages and oracle accuracy", _run_data_stats),
    ):
        c = dsub.add_parser(name, help=helptext)
        c.add_argument("datasets", nargs="+", metavar="DATASET_DIR", help="dataset folders or names; 'all'")
        c.add_argument("--cache-dir", default=None, help="default $BODYBLOCKS_CACHE or ~/.cache/bodyblocks")
        c.add_argument("--workers", type=int, default=2, help="worker processes (2)")
        c.set_defaults(handler=run)
    dsub.choices["split"].add_argument("--seed", type=int, default=0, help="seed of the grouped draw")
    dsub.choices["split"].add_argument("--out", default=None, help="default <repo>/data/splits")
    dsub.choices["oracle"].add_argument("--out", required=True, help="folder for <id>.txt (one per dataset)")
    dsub.choices["oracle"].add_argument("--misses", type=int, default=0, help="list the N worst pages")
    e = dsub.add_parser("embed", help="fill a frozen text encoder's vector cache with every distinct block text")
    e.add_argument("datasets", nargs="+", metavar="DATASET_DIR", help="dataset folders or names; 'all'")
    e.add_argument("--config", required=True, help="a config whose model.encoder is frozen (e.g. configs/e5.yaml)")
    e.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set model.encoder.max_length=64 (repeatable)")
    e.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ...")
    e.add_argument("--chunk", type=int, default=20_000, help="distinct texts per stored chunk (a rerun resumes)")
    e.add_argument("--cache-dir", default=None, help="the datasets' processed cache; default $BODYBLOCKS_CACHE")
    e.add_argument("--workers", type=int, default=2, help="worker processes reading the pages (2)")
    e.set_defaults(handler=_run_data_embed)


def _run_data_synth(args: argparse.Namespace) -> int:
    from bodyblocks.training.synth import generate_corpus

    pages = generate_corpus(args.out, pages=args.pages, seed=args.seed)
    print(f"wrote {len(pages)} pages to {args.out}")
    return 0


def _run_data_split(args: argparse.Namespace) -> int:
    from bodyblocks.training.datasets import resolve_datasets
    from bodyblocks.training.splits import write_splits

    for folder in resolve_datasets(args.datasets):
        parts = write_splits(folder, args.out, seed=args.seed)
        print(folder.name, " ".join(f"{k} {len(v)}" for k, v in parts.items()))
    return 0


def _run_data_cache(args: argparse.Namespace) -> int:
    from bodyblocks.training.cache import cache_path, load_cached, timed_build
    from bodyblocks.training.datasets import resolve_datasets

    for folder in resolve_datasets(args.datasets):
        path, secs = timed_build(folder, args.cache_dir, args.workers)
        pages = load_cached(folder, args.cache_dir, build=False)
        failed = sum(cp.error is not None for cp in pages)
        size = cache_path(folder, args.cache_dir).stat().st_size / 1e6
        print(f"{folder.name}: {len(pages)} pages ({failed} failed) in {secs:.1f}s, {size:.1f} MB -> {path}")
    return 0


def _run_data_oracle(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bodyblocks.training.cache import load_cached
    from bodyblocks.training.datasets import resolve_datasets
    from bodyblocks.training.oracle import format_rows, misses, oracle_rows, write_oracle

    rows = []
    many = len(args.datasets) > 1 or args.datasets == ["all"]
    for folder in resolve_datasets(args.datasets):
        pages = load_cached(folder, args.cache_dir, args.workers)
        write_oracle(pages, Path(args.out) / folder.name if many else args.out)
        rows += oracle_rows(pages)
        for ratio, cp in misses(pages)[: args.misses]:
            print(f"miss {ratio:.3f} {cp.dataset} {cp.id} coverage {cp.gold_coverage:.3f} {cp.error or ''}")
    print(format_rows(rows))
    return 0


def _run_data_stats(args: argparse.Namespace) -> int:
    from bodyblocks.training.cache import load_cached
    from bodyblocks.training.datasets import resolve_datasets
    from bodyblocks.training.oracle import dataset_stats, format_stats

    for folder in resolve_datasets(args.datasets):
        print(format_stats(folder.name, dataset_stats(load_cached(folder, args.cache_dir, args.workers))))
    return 0


def _run_data_embed(args: argparse.Namespace) -> int:
    from bodyblocks.classify.encoders import make_encoder
    from bodyblocks.config import load_config
    from bodyblocks.training.cache import load_cached
    from bodyblocks.training.datasets import resolve_datasets
    from bodyblocks.training.embed import cached_frozen_encoder, embed_texts

    enc = cached_frozen_encoder(load_config(args.config, args.overrides), args.config)
    texts = [b.text for folder in resolve_datasets(args.datasets)
             for cp in load_cached(folder, args.cache_dir, args.workers) for b in cp.blocks]
    encoder = make_encoder(enc, device=args.device)
    done = embed_texts(encoder, texts, chunk=args.chunk, progress=print)
    print(f"{encoder.id}: {done.distinct} distinct texts of {len(texts)} blocks, {done.computed} computed in "
          f"{done.seconds:.0f} s ({done.computed / max(done.seconds, 1e-9):.0f} texts/s), {done.cached} cached before")
    return 0


# --- end data -------------------------------------------------------------------------------------------------
