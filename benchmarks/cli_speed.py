"""The whole command, as a user runs it: `bodyblocks extract` against `trafilatura` on the same folder.

    python -m benchmarks.cli_speed                            # 1, 181 and 2,000 pages; 3 rounds (1 for 2,000)
    python -m benchmarks.cli_speed --sizes 1,181 --rounds 5 --write docs/SPEED.md#cli-speed
    python -m benchmarks.cli_speed --no-upgrade                # time the installed trafilatura as it is
    python -m benchmarks.cli_speed --kind news,mix --sizes 1,181,2000 --write docs/SPEED.md#cli-speed

trafilatura: the newest release on the package index (`pip index versions trafilatura`) is installed first
unless --no-upgrade (or the index cannot be reached); the version timed is printed in the report.

Each round runs every command once on each folder, ours and trafilatura's alternating, as whole processes:
wall seconds, CPU seconds (user + system of the process and every worker it waited for) and peak RSS (the
largest of those processes; os.wait4). Settings: both with their defaults, and both with 2 cores
(`--workers 2`, `--parallel 2`); and, when it is shipped, the faster preset (`--checkpoint fast`: the ensemble
whose model has no context layers) with its defaults, held against trafilatura's defaults. Pages are plain
.html files from the shared datasets (synthetic pages when they are absent), of one of three kinds (`--kind`):
  mix   every dataset's pages, round-robin (benchmarks.common.write_pages: cleaneval-en, daniel, dragnet,
        l3s-gn1, wcxb-dev, cleanportaleval), listings, forums and service pages among the articles;
  news  news articles only (write_source_pages of NEWS), round-robin over l3s-gn1 (Google News articles), dragnet (news
        and blog articles), daniel (news sites, 2011-12, five languages), wcxb-dev's pages typed `article`
        and cleanportaleval (bbc, msnbc, washingtonpost, wsj blogs), every k-th record of each;
  modern  pages of the 2020s, large (MODERN: wcxb-dev's pages of every type and trafilatura-eval's), round-robin.
1 page is data/samples/article-utf8.html (a news article), timed once for every kind. bodyblocks' modules are
byte-compiled first, as a wheel install leaves them (trafilatura's are); the command is the console script beside
this interpreter (PYTHONPATH inherited: `PYTHONPATH=$PWD/src:$PWD` times a work tree's code; the report names
the package timed). Figures are medians over the rounds, which alternate who goes first; ratios are
trafilatura's figure over ours (> 1: we are faster); cores busy is CPU s / wall s (2 at most on 2 cores). CPU
per page is (CPU of the largest run - CPU of the one-page run) / (pages - 1): the fixed cost removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import arguments, write_pages, write_report, write_round_robin

# the news folder's sources (write_source_pages), in this order: (dataset, the page_type kept; None: every page)
NEWS = (("l3s-gn1", None), ("dragnet", None), ("daniel", None), ("wcxb-dev", "article"), ("cleanportaleval", None))
# the modern folder's sources: today's pages, large, every type
MODERN = (("wcxb-dev", None), ("trafilatura-eval", None))
KINDS = ("news", "mix", "modern")


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float


FAST = "bodyblocks --checkpoint fast"


def bodyblocks_prefix() -> list[str]:
    """The `bodyblocks` command as a user runs it: the console script of this interpreter's environment (it
    imports the package this process would, PYTHONPATH included: a work tree's src first), else `python -m
    bodyblocks`. Not a `bodyblocks` found elsewhere on PATH, which may be another install's."""
    script = Path(sys.executable).with_name("bodyblocks")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "bodyblocks"]


def bodyblocks_command(pages: Path) -> list[str]:
    """`bodyblocks extract` of a folder as a user runs it (bodyblocks_prefix), before its --out and options."""
    return [*bodyblocks_prefix(), "extract", str(pages), "--no-progress", "--no-resume"]


def trafilatura_command(pages: Path) -> list[str]:
    """trafilatura's command on a folder, before its --output-dir and options."""
    return [shutil.which("trafilatura") or "trafilatura", "--input-dir", str(pages)]


def trafilatura_version() -> str | None:
    """The installed trafilatura's version (its distribution's metadata), None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version("trafilatura")
    except metadata.PackageNotFoundError:
        return None


def newest_trafilatura() -> str | None:
    """The newest trafilatura release on the package index pip uses (`pip index versions`), None when pip cannot
    say (no network, an index without the listing)."""
    found = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "trafilatura"], capture_output=True,
                           text=True, check=False)
    for line in found.stdout.splitlines():  # "trafilatura (2.3.1)"
        if line.startswith("trafilatura (") and line.rstrip().endswith(")"):
            return line.strip()[len("trafilatura (") : -1]
    return None


def ensure_newest_trafilatura() -> tuple[str | None, str | None]:
    """Install the index's newest trafilatura when the installed one is another or none: (installed, newest)."""
    newest, installed = newest_trafilatura(), trafilatura_version()
    if newest is not None and installed != newest:
        print(f"trafilatura {installed or 'not installed'}: installing {newest}, the newest on the index",
              file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"trafilatura=={newest}"], check=False)
        installed = trafilatura_version()
    return installed, newest


def write_source_pages(folder: Path, n: int, sources: tuple[tuple[str, str | None], ...]) -> int:
    """`n` pages of `sources` ((dataset, page_type kept or None) as NEWS, round-robin, every k-th record of each);
    the mixed folder (write_pages) when the datasets are absent."""
    from bodyblocks.runtime.files import datasets_root
    from bodyblocks.training.datasets import read_records

    root = datasets_root()
    found = [(d, t) for d, t in sources if root is not None and (root / d / "pages.jsonl").exists()]
    if n == 1 or not found:
        return write_pages(folder, n)
    assert root is not None
    folder.mkdir(parents=True, exist_ok=True)
    return write_round_robin(folder, root, [
        (d, [r for r in read_records(root / d) if page_type is None or r.get("page_type") == page_type])
        for d, page_type in found], n)


def write_folder(kind: str, folder: Path, n: int) -> int:
    """`n` pages of this kind (KINDS) into `folder`; how many were written."""
    sources = {"news": NEWS, "modern": MODERN}.get(kind)
    return write_pages(folder, n) if sources is None else write_source_pages(folder, n, sources)


def median_run(runs: list[Run]) -> Run:
    """Each figure's median over the rounds."""
    return Run(*(statistics.median(getattr(r, f) for r in runs) for f in ("wall", "cpu", "rss_mb")))


def commands(pages: Path, out: Path) -> dict[str, list[str]]:
    """The commands on one folder (their output folders under `out`)."""
    bodyblocks, trafilatura = bodyblocks_command(pages), trafilatura_command(pages)
    cmds = {
        "bodyblocks": [*bodyblocks, "--out", str(out / "bb")],
        "trafilatura": [*trafilatura, "--output-dir", str(out / "tr")],
        "bodyblocks --workers 2": [*bodyblocks, "--workers", "2", "--out", str(out / "bb2")],
        "trafilatura --parallel 2": [*trafilatura, "--parallel", "2", "--output-dir", str(out / "tr2")],
    }
    from bodyblocks.loading.checkpoints import shipped

    if shipped("fast") is not None:  # the shipped preset without context layers, with its defaults
        cmds[FAST] = [*bodyblocks, "--checkpoint", "fast", "--out", str(out / "bbf")]
    return cmds


def timed(cmd: list[str], out_dirs: list[Path]) -> Run:
    """One whole process: wall, CPU (its own and its reaped children's) and peak RSS."""
    for d in out_dirs:
        shutil.rmtree(d, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):  # 1: some page failed (counted in its report), still a whole run
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err[-500:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def compile_package() -> bool:
    """Byte-compile the bodyblocks package where it is imported from, as `pip install` of a wheel does (and as
    trafilatura's install is): an editable install under PYTHONDONTWRITEBYTECODE would otherwise compile every
    module again in every process it starts. True when every module compiled."""
    import compileall

    import bodyblocks

    return bool(compileall.compile_dir(Path(bodyblocks.__file__).parent, quiet=1, workers=1))


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, rounds=3, write=True)
    ap.add_argument("--sizes", default="1,181,2000", help="pages per folder, comma-separated")
    ap.add_argument("--kind", default="news,mix", help=f"folders of these kinds, comma-separated ({', '.join(KINDS)})")
    ap.add_argument("--big-rounds", type=int, default=1, help="rounds for folders of 1,000 pages or more")
    ap.add_argument("--no-upgrade", action="store_true", help="time the installed trafilatura, whatever its version")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kind.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        ap.error(f"--kind: one or more of {', '.join(KINDS)}")
    args.trafilatura, args.newest = (trafilatura_version(), None) if args.no_upgrade else ensure_newest_trafilatura()
    if shutil.which("trafilatura") is None:
        print("trafilatura is not installed: pip install 'bodyblocks[peers]'", file=sys.stderr)
        return 2
    compiled = compile_package()
    args.package = package_timed()
    print(f"bodyblocks timed: {args.package}; its modules compiled to bytecode as a wheel install leaves them: "
          f"{compiled}", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="bodyblocks-cli-speed-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    # the one-page folder is the same sample article for every kind: timed once
    folders = [("page", 1)] if 1 in sizes else []
    folders += [(kind, size) for size in sizes if size != 1 for kind in kinds]
    results: dict[tuple[str, int], dict[str, list[Run]]] = {}
    counts: dict[tuple[str, int], int] = {}
    for kind, size in folders:
        folder = work / f"pages-{kind}-{size}"
        counts[kind, size] = write_folder("news" if kind == "page" else kind, folder, size)
        out = work / f"out-{kind}-{size}"  # every command's output folder is in it
        cmds = commands(folder, out)
        results[kind, size] = {name: [] for name in cmds}
        rounds = args.big_rounds if size >= 1000 else args.rounds
        for r in range(rounds):
            order = list(cmds.items()) if r % 2 == 0 else list(cmds.items())[::-1]  # who goes first alternates
            for name, cmd in order:  # ours and theirs alternate
                run = timed(cmd, [out])
                results[kind, size][name].append(run)
                print(f"{kind}, {counts[kind, size]} pages, round {r + 1}: {name}: {run.wall:.2f} s wall, "
                      f"{run.cpu:.2f} s CPU, {run.rss_mb:.0f} MB", file=sys.stderr)
    text = report(results, counts, args)
    print(text)
    write_report(args.write, text, {f"{k} {n}": {name: [vars(r) for r in runs] for name, runs in by.items()}
                                    for (k, n), by in results.items()})
    shutil.rmtree(work, ignore_errors=True)
    return 0


def package_timed() -> str:
    """Where the timed command imports bodyblocks from (this process's environment, PYTHONPATH included)."""
    found = subprocess.run([*bodyblocks_prefix(), "--version"], capture_output=True, text=True, check=False)
    where = subprocess.run([sys.executable, "-c", "import bodyblocks; print(bodyblocks.__file__)"],
                           capture_output=True, text=True, check=False)
    return f"{found.stdout.strip() or '?'} from {Path(where.stdout.strip()).parent}"


PAIRS = (("bodyblocks", "trafilatura", "defaults"),
         ("bodyblocks --workers 2", "trafilatura --parallel 2", "2 cores each"),
         (FAST, "trafilatura", "`--checkpoint fast` against trafilatura's defaults"))


def report(results: dict[tuple[str, int], dict[str, list[Run]]], counts: dict[tuple[str, int], int],
           args: argparse.Namespace) -> str:
    med = {key: {name: median_run(runs) for name, runs in by.items()} for key, by in results.items()}
    rounds = {key: len(next(iter(by.values()))) for key, by in results.items()}
    lines = ["# The whole command: `bodyblocks extract` against `trafilatura`", "",
             "Written by benchmarks/cli_speed.py (its docstring says how each figure is taken and which pages).", "",
             f"Machine: {os.cpu_count()} cores; `python -m benchmarks.cli_speed --kind {args.kind} --sizes "
             f"{args.sizes} --rounds {args.rounds} --big-rounds {args.big_rounds}` (medians; rounds: "
             + ", ".join(f"{k} {counts[k, n]}: {rounds[k, n]}" for k, n in med) + ")", "",
             f"trafilatura {getattr(args, 'trafilatura', None) or '?'} (newest on the package index: "
             f"{getattr(args, 'newest', None) or 'not checked'}); bodyblocks: {getattr(args, 'package', '?')}", "",
             "| pages | kind | command | wall s | CPU s | cores busy (CPU / wall) | peak MB |",
             "|---|---|---|---|---|---|---|"]
    for (kind, size), by in med.items():
        for name, m in by.items():
            lines.append(f"| {counts[kind, size]} | {kind} | `{name}` | {m.wall:.2f} | {m.cpu:.2f} | "
                         f"{m.cpu / m.wall:.2f} | {m.rss_mb:.0f} |")
    lines += ["", "| pages | kind | settings | wall: trafilatura / ours | CPU: trafilatura / ours |",
              "|---|---|---|---|---|"]
    for (kind, size), by in med.items():
        for ours, theirs, label in PAIRS:
            if ours in by and theirs in by:
                lines.append(f"| {counts[kind, size]} | {kind} | {label} | {by[theirs].wall / by[ours].wall:.2f} | "
                             f"{by[theirs].cpu / by[ours].cpu:.2f} |")
    if ("page", 1) in med:
        lines += ["", "CPU per page, fixed cost removed (the largest run less the 1-page run, defaults):"]
        for kind in dict.fromkeys(k for k, _ in med if k != "page"):
            big = max(n for k, n in med if k == kind)
            for name in ("bodyblocks", FAST, "trafilatura"):
                if name in med[kind, big] and name in med["page", 1]:
                    per = (med[kind, big][name].cpu - med["page", 1][name].cpu) / max(1, counts[kind, big] - 1)
                    lines.append(f"- {kind}, {counts[kind, big]} pages, `{name}`: {per * 1000:.1f} ms")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
