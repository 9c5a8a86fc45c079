"""Command line: each subcommand is a thin wrapper over one function of the package.

Sections are owned by areas of the pipeline; keep each subcommand's parser and handler together.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


# --- segment (segment.py) -------------------------------------------------------------------------------------
def _add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="cut a page into ordered text blocks (JSON lines or a table)")
    p.add_argument("page", help="a .html, .htm or .html.gz file")
    p.add_argument("--format", choices=["jsonl", "table"], default="jsonl")
    p.set_defaults(handler=_run_segment)


def _run_segment(args: argparse.Namespace) -> int:
    from bodyblocks.segment import print_segmentation

    return print_segmentation(args.page, fmt=args.format, out=sys.stdout)


# --- end segment ----------------------------------------------------------------------------------------------


# --- extract (batch/) -----------------------------------------------------------------------------------------
def _add_extract(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="extract the body text of pages into one output file per page")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="page files (.html/.htm/.html.gz), folders, dataset folders, or a .txt file of URLs")
    p.add_argument("--out", required=True, help="output folder (also gets report.json)")
    p.add_argument("--extractor", default=None, help="model (default when a checkpoint is shipped), heuristic, ...")
    p.add_argument("--checkpoint", default=None, help="model folder (default: the shipped checkpoints/default)")
    p.add_argument("--format", choices=["txt", "json", "md"], default="txt")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--batch-size", type=int, default=None,
                   help="pages per forward pass of the model (default: 1 on CPU, where padding costs more than "
                        "batching saves; 64 on CUDA)")
    p.add_argument("--workers", type=int, default=1, help="parsing processes")
    p.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=None,
                   help="run the model's forward pass on a second thread while the next pages are parsed "
                        "(default: on)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch CPU threads of the model (default 0: the usable cores divided by --workers, "
                        "less one for this thread when the forward pass overlaps)")
    p.add_argument("--page-timeout", type=int, default=60, help="seconds per page before it is failed")
    p.add_argument("--fallback", action="store_true", help="low-confidence pages fall back to the heuristic")
    p.add_argument("--no-vote", action="store_true",
                   help="ensemble: leave out the heuristic's vote (faster; the blend and rule tuned without it)")
    p.add_argument("--review", type=float, default=0.0, help="share of pages that get a review page")
    p.add_argument("--no-resume", action="store_true", help="redo pages whose output exists")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--capture-timeout", type=float, default=30.0, help="per-URL timeout when INPUT is a URL list")
    p.set_defaults(handler=_run_extract)


def _run_extract(args: argparse.Namespace) -> int:
    from bodyblocks.batch import BatchOptions, default_threads, run_batch
    from bodyblocks.inference.registry import TORCH, default_extractor_name

    name = args.extractor or default_extractor_name()
    extractor_opts: dict = {}
    if name in TORCH:
        threads = args.threads or default_threads(args.workers, args.overlap is not False)
        extractor_opts = {"device": args.device, "fallback": args.fallback, "threads": threads}
        if args.checkpoint:
            extractor_opts["checkpoint"] = args.checkpoint
    if args.no_vote:
        if name != "ensemble":
            print(f"bodyblocks extract: --no-vote is an option of the ensemble, not of {name}", file=sys.stderr)
            return 2
        extractor_opts["vote"] = False
    batch_size = args.batch_size
    if batch_size is None:
        import torch

        cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        batch_size = 64 if cuda and name in TORCH else 1
    opts = BatchOptions(
        extractor=name, extractor_opts=extractor_opts, fmt=args.format, workers=args.workers,
        batch_size=batch_size, page_timeout=args.page_timeout, resume=not args.no_resume,
        overlap=args.overlap, review=args.review, progress=not args.no_progress,
        capture_opts={"timeout": args.capture_timeout},
    )
    totals = run_batch(args.inputs, args.out, opts)
    print(f"{totals.ok} extracted, {totals.failed} failed, {totals.skipped} skipped (already done), "
          f"{totals.low_confidence} low-confidence; report: {args.out}/report.json", file=sys.stderr)
    for reason, n in sorted(totals.reasons.items()):
        print(f"  failed ({reason}): {n}", file=sys.stderr)
    return 1 if totals.failed else 0


# --- end extract ----------------------------------------------------------------------------------------------


# --- train, tune, ensemble (training/loop.py, training/tune.py) -----------------------------------------------
def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a block classifier from a config (configs/*.yaml)")
    p.add_argument("config", help="YAML config, e.g. configs/default.yaml")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last after an interruption")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.lr=1e-3 (repeatable)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    import json

    import torch

    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.loop import train

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg = load_config(args.config, args.overrides)
    except (ConfigError, OSError) as exc:
        print(f"bodyblocks train: {exc}", file=sys.stderr)
        return 2
    metrics = train(cfg, resume=args.resume, progress=not args.no_progress)
    print(json.dumps(metrics, indent=2))
    return 0


def _add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="re-tune a checkpoint's decision rule (threshold, rescue) on validation")
    p.add_argument("checkpoint", help="model, gbt or ensemble folder (config.json is rewritten; an ensemble's "
                                      "weights too, which needs the validation pages' HTML in the datasets)")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages (default: the checkpoint's own)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set data.root=DIR (repeatable)")
    p.set_defaults(handler=_run_tune)


def _add_ensemble(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ensemble", help="blend a model, a gbt checkpoint and the heuristic's vote; weights and rule "
                                        "tuned on the validation pages (their HTML is read from the datasets)")
    p.add_argument("model", help="model checkpoint folder, e.g. checkpoints/default")
    p.add_argument("gbt", help="gbt checkpoint folder, e.g. checkpoints/gbt")
    p.add_argument("--out", required=True, help="ensemble folder to write (config.json with relative paths)")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages (default: the model's own) and whose "
                        "ensemble section the blends tried")
    p.set_defaults(handler=_run_ensemble)


def _run_ensemble(args: argparse.Namespace) -> int:
    import json

    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.tune import make_ensemble

    try:
        cfg = load_config(args.config) if args.config else None
        result = make_ensemble(args.model, args.gbt, args.out, cfg.data if cfg else None, cfg.ensemble if cfg else None)
    except (ConfigError, OSError, ValueError, KeyError) as exc:
        print(f"bodyblocks ensemble: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


def _run_tune(args: argparse.Namespace) -> int:
    import json

    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.tune import retune

    try:
        cfg = load_config(args.config, args.overrides) if args.config or args.overrides else None
        result = retune(args.checkpoint, cfg.data if cfg else None, cfg.ensemble if cfg else None)
    except (ConfigError, OSError, ValueError, KeyError) as exc:
        print(f"bodyblocks tune: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


# --- end train ------------------------------------------------------------------------------------------------

# --- evaluate (evaluation/) -----------------------------------------------------------------------------------
def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score extractors on datasets: table, JSON, per-page CSV, plot")
    p.add_argument("datasets", nargs="+", metavar="DATASET_DIR", help="dataset folders (or names under the root)")
    p.add_argument("--extractor", nargs="+", required=True, metavar="NAME",
                   help="density heuristic scorer regex longest trafilatura readability gne model")
    p.add_argument("--split", default=None, help="evaluate one split only (e.g. test); default: all pages")
    p.add_argument("--limit", type=int, default=None, help="at most N pages per dataset, evenly spread")
    p.add_argument("--workers", type=int, default=1, help="extraction processes (0: in-process, no time limit)")
    p.add_argument("--page-timeout", type=float, default=60.0, help="seconds per page and extractor")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint folder of the one trained extractor asked for (model, gbt or ensemble)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the report JSON here")
    p.add_argument("--out", default=None, metavar="DIR", help="write report.json, pages.csv, accuracy.png, report.md")
    p.add_argument("--by-lang", action="store_true", help="also print the per-language table")
    p.set_defaults(handler=_run_evaluate)


def _run_evaluate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bodyblocks.evaluation.evaluate import EvalConfig, evaluate
    from bodyblocks.evaluation.report import format_table, write_outputs
    from bodyblocks.inference.registry import TRAINED

    trained = [n for n in args.extractor if n in TRAINED]
    if args.checkpoint and len(trained) != 1:
        print("bodyblocks evaluate: --checkpoint needs exactly one of model, gbt, ensemble among the extractors",
              file=sys.stderr)
        return 2
    opts = {trained[0]: {"checkpoint": args.checkpoint}} if args.checkpoint else {}
    cfg = EvalConfig(list(args.datasets), list(args.extractor), args.split, args.limit, args.workers,
                     args.page_timeout, opts)
    report, results = evaluate(cfg, progress=lambda msg: print(msg, file=sys.stderr))
    for name, note in report["selection"].items():
        if note.get("split_source"):
            print(f"{name}: split {note['split']} from {note['split_source']}", file=sys.stderr)
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


# --- end evaluate ---------------------------------------------------------------------------------------------

# --- data (training/: synth, datasets, splits, cache, oracle) -------------------------------------------------
def _add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="datasets: synthetic corpus, splits, processed cache, oracle, statistics")
    dsub = p.add_subparsers(dest="data_command", required=True)
    s = dsub.add_parser("synth", help="write a synthetic Chinese corpus in the shared dataset layout")
    s.add_argument("--out", required=True, help="folder to create")
    s.add_argument("--pages", type=int, default=300)
    s.add_argument("--seed", type=int, default=0)
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
        c.add_argument("--workers", type=int, default=2)
        c.set_defaults(handler=run)
    dsub.choices["split"].add_argument("--seed", type=int, default=0)
    dsub.choices["split"].add_argument("--out", default=None, help="default <repo>/data/splits")
    dsub.choices["oracle"].add_argument("--out", required=True, help="folder for <id>.txt (one per dataset)")
    dsub.choices["oracle"].add_argument("--misses", type=int, default=0, help="list the N worst pages")


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


# --- end data -------------------------------------------------------------------------------------------------

# --- capture (capture.py) -------------------------------------------------------------------------------------
def _add_capture(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="render URLs in headless Chromium and save the HTML (DIR/<n>.html)")
    p.add_argument("urls_file", metavar="URLS_FILE", help="one URL per line ('-' for standard input; # comments)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: <n>.html files and capture.jsonl")
    p.add_argument("--concurrency", type=int, default=1, help="browsers in parallel")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per page load")
    p.add_argument("--wait", type=float, default=0.5, help="settle seconds after the document is complete")
    p.add_argument("--retries", type=int, default=1, help="extra attempts after timeouts and errors")
    p.add_argument("--politeness", type=float, default=1.0, help="minimum seconds between requests to one host")
    p.add_argument("--recycle-after", type=int, default=50, help="pages per browser before a fresh one")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    p.set_defaults(handler=_run_capture)


def _run_capture(args: argparse.Namespace) -> int:
    from bodyblocks.capture import CaptureUnavailable, capture_to_dir, read_urls

    opts = {k: getattr(args, k) for k in ("concurrency", "timeout", "wait", "retries", "politeness",
                                          "recycle_after", "chromium", "chromedriver")}
    try:
        summary = capture_to_dir(read_urls(args.urls_file), args.out, **opts)
    except (CaptureUnavailable, ValueError, FileNotFoundError) as exc:  # missing browser, bad option or file
        print(f"bodyblocks capture: {exc}", file=sys.stderr)
        return 2
    counts = ", ".join(f"{status} {n}" for status, n in sorted(summary.by_status.items()))
    print(f"captured {summary.total} URLs in {summary.elapsed:.1f} s ({counts}); "
          f"log: {summary.out_dir / 'capture.jsonl'}", file=sys.stderr)
    for index, url, reason in summary.failed:
        print(f"  failed [{index}] {url}: {reason}", file=sys.stderr)
    return 1 if summary.failed else 0


# --- end capture ----------------------------------------------------------------------------------------------

# --- gbt, ship (training/gbt.py, training/ship.py) ------------------------------------------------------------
def _add_gbt(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train-gbt", help="train the gradient-boosted tree baseline on the block features")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages and whose gbt section sets the trees")
    p.add_argument("--out", default="checkpoints/gbt", help="checkpoint folder (default: checkpoints/gbt)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set data.max_pages=50 or gbt.max_leaf_nodes=63 (repeatable)")
    p.add_argument("--max-iter", type=int, default=None, help="boosting iterations (as --set gbt.max_iter=N)")
    p.set_defaults(handler=_run_gbt)


def _run_gbt(args: argparse.Namespace) -> int:
    import json

    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.gbt import train_and_save

    overrides = [*args.overrides, *([f"gbt.max_iter={args.max_iter}"] if args.max_iter is not None else [])]
    try:
        cfg = load_config(args.config, overrides)
    except (ConfigError, OSError) as exc:
        print(f"bodyblocks train-gbt: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(train_and_save(cfg.data, args.out, cfg.gbt), indent=2))
    return 0


def _add_ship(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ship", help="make a trained model checkpoint a shipped one (fp16 weights, no train state)")
    p.add_argument("checkpoint", help="a trained model folder, e.g. runs/default/best")
    p.add_argument("--out", required=True, help="the folder to write, e.g. checkpoints/default")
    p.set_defaults(handler=_run_ship)


def _run_ship(args: argparse.Namespace) -> int:
    import json

    from bodyblocks.training.ship import ship_model

    try:
        result = ship_model(args.checkpoint, args.out)
    except (OSError, ValueError) as exc:
        print(f"bodyblocks ship: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


# --- end gbt --------------------------------------------------------------------------------------------------
SECTIONS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_segment,
    _add_extract,
    _add_tune,
    _add_ensemble,
    _add_train,
    _add_evaluate,
    _add_data,
    _add_capture,
    _add_gbt,
    _add_ship,
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand."""
    from bodyblocks import __version__

    parser = argparse.ArgumentParser(prog="bodyblocks", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bodyblocks {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SECTIONS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bodyblocks` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # e.g. `bodyblocks segment page.html | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
