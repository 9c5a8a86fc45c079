"""The whole command, as a user runs it: `bodyblocks extract` against `trafilatura` on the same folder.

    python -m benchmarks.cli_speed                            # 1, 181 and 2,000 pages; 3 rounds (1 for 2,000)
    python -m benchmarks.cli_speed --sizes 1,181 --rounds 5 --write docs/SPEED.md#cli-speed
    python -m benchmarks.cli_speed --no-upgrade                # time the installed trafilatura as it is

trafilatura: the newest release on the package index (`pip index versions trafilatura`) is installed first
unless --no-upgrade (or the index cannot be reached); the version timed is printed in the report.

Each round runs every command once on each folder, ours and trafilatura's alternating, as whole processes:
wall seconds, CPU seconds (user + system of the process and every worker it waited for) and peak RSS (the
largest of those processes; os.wait4). Settings: both with their defaults, and both with 2 cores
(`--workers 2`, `--parallel 2`); and, when it is shipped, the faster preset (`--checkpoint fast`: the ensemble
whose model has no context layers) with its defaults, held against trafilatura's defaults. Pages are plain
.html files spread over the shared datasets (synthetic pages when they are absent); 1 page is
data/samples/article-utf8.html. bodyblocks' modules are byte-compiled first, as a
wheel install leaves them (trafilatura's are). Figures are medians over the rounds; ratios
are trafilatura's figure over ours (> 1: we are faster). CPU per page is (CPU of the largest run - CPU of the
one-page run) / (pages - 1): the fixed cost removed.
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

from benchmarks.common import arguments, write_pages, write_report


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float


FAST = "bodyblocks --checkpoint fast"


def bodyblocks_command(pages: Path) -> list[str]:
    """`bodyblocks extract` of a folder as a user runs it (the console script), before its --out and options."""
    script = shutil.which("bodyblocks")
    return [*([script] if script else [sys.executable, "-m", "bodyblocks"]), "extract", str(pages),
            "--no-progress", "--no-resume"]


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
    from bodyblocks.inference.checkpoints import shipped

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
    ap.add_argument("--big-rounds", type=int, default=1, help="rounds for folders of 1,000 pages or more")
    ap.add_argument("--no-upgrade", action="store_true", help="time the installed trafilatura, whatever its version")
    args = ap.parse_args(argv)
    args.trafilatura, args.newest = (trafilatura_version(), None) if args.no_upgrade else ensure_newest_trafilatura()
    if shutil.which("trafilatura") is None:
        print("trafilatura is not installed: pip install 'bodyblocks[peers]'", file=sys.stderr)
        return 2
    compiled = compile_package()
    print(f"bodyblocks' modules compiled to bytecode as a wheel install leaves them: {compiled}", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="bodyblocks-cli-speed-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, list[Run]]] = {}
    counts = {}
    for size in sizes:
        folder = work / f"pages-{size}"
        counts[size] = write_pages(folder, size)
        cmds = commands(folder, work / f"out-{size}")
        outs = [work / f"out-{size}"]  # every command's output folder is in it
        results[size] = {name: [] for name in cmds}
        rounds = args.big_rounds if size >= 1000 else args.rounds
        for r in range(rounds):
            for name, cmd in cmds.items():  # ours and theirs alternate
                run = timed(cmd, outs)
                results[size][name].append(run)
                print(f"{counts[size]} pages, round {r + 1}: {name}: {run.wall:.2f} s wall, {run.cpu:.2f} s CPU, "
                      f"{run.rss_mb:.0f} MB", file=sys.stderr)
    text = report(results, counts, args)
    print(text)
    write_report(args.write, text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def report(results: dict[int, dict[str, list[Run]]], counts: dict[int, int], args: argparse.Namespace) -> str:
    med = {size: {name: median_run(runs) for name, runs in by.items()} for size, by in results.items()}
    lines = ["# The whole command: `bodyblocks extract` against `trafilatura`", "",
             "Written by benchmarks/cli_speed.py (its docstring says how each figure is taken).", "",
             f"Machine: {os.cpu_count()} cores; `python -m benchmarks.cli_speed --sizes {args.sizes} --rounds "
             f"{args.rounds} --big-rounds {args.big_rounds}` (medians)", "",
             f"trafilatura {getattr(args, 'trafilatura', None) or '?'} (newest on the package index: "
             f"{getattr(args, 'newest', None) or 'not checked'})", "",
             "| pages | command | wall s | CPU s | peak MB |", "|---|---|---|---|---|"]
    for size, by in med.items():
        for name, m in by.items():
            lines.append(f"| {counts[size]} | `{name}` | {m.wall:.2f} | {m.cpu:.2f} | {m.rss_mb:.0f} |")
    lines += ["", "| pages | settings | wall: trafilatura / ours | CPU: trafilatura / ours |", "|---|---|---|---|"]
    for size, by in med.items():
        pairs = [("bodyblocks", "trafilatura", "defaults"),
                 ("bodyblocks --workers 2", "trafilatura --parallel 2", "2 cores each")]
        if FAST in by:
            pairs.append((FAST, "trafilatura", "`--checkpoint fast` against trafilatura's defaults"))
        for ours, theirs, label in pairs:
            lines.append(f"| {counts[size]} | {label} | {by[theirs].wall / by[ours].wall:.2f} | "
                         f"{by[theirs].cpu / by[ours].cpu:.2f} |")
    sizes = sorted(med)
    if len(sizes) > 1 and sizes[0] == 1:
        big = sizes[-1]
        lines += ["", f"CPU per page, fixed cost removed ({counts[big]}-page run less the 1-page run, defaults):"]
        for name in ("bodyblocks", FAST, "trafilatura"):
            if name not in med[big] or name not in med[1]:
                continue
            per = (med[big][name].cpu - med[1][name].cpu) / max(1, counts[big] - 1) * 1000
            lines.append(f"- `{name}`: {per:.1f} ms")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
