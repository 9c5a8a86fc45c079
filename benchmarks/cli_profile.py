"""Where the whole command's CPU goes: `bodyblocks extract` with CPU-time counters in its process and its workers.

    python -m benchmarks.cli_profile                          # 300 dataset pages, this tree, 2 rounds
    python -m benchmarks.cli_profile --against HEAD~1         # that revision too, the two alternating
    python -m benchmarks.cli_profile --kind news --pages 181   # cli_speed's news folder (default: its mix)

Each run is `bodyblocks extract DIR --out O --no-progress --no-resume` in a process of its own, as a user runs
it (its defaults: a worker per usable core), with the functions below wrapped by counters of CPU time
(time.process_time, per process: waiting for a pipe counts nothing) and the garbage collector's time taken
from gc.callbacks; every process writes its counters after each page. Figures are ms per page, summed over
the workers (or the run's own process), medians over the rounds; a part's figure includes the parts it calls
(`segment_tree` the walk, `extract` everything from the page's text to its Extraction). `whole` is the CPU of
the command (its process and every worker, os.wait4). `--against REV`: REV's src and checkpoints from `git
archive`, first on PYTHONPATH; a part that revision lacks is left out. Pages: benchmarks/cli_speed.py's folder of
`--kind` (mix: every dataset's pages; news: news articles only). `worker: waiting` is the wall time a worker
spent between two pages (its answer sent, the next page not yet there): time a core was left idle.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import arguments

# (label, module, attribute): what is timed; an attribute "Class.method" wraps the class's method
PARTS = (
    ("worker: page (work)", "bodyblocks.batch.runner", "work"),
    ("worker: read file", "bodyblocks.batch.worker", "read_bytes"),
    ("worker: extract", "bodyblocks.extraction.extractor", "BlockExtractor.extract"),
    ("worker: segment_tree", "bodyblocks.extraction.segmenting", "segment_parsed"),
    ("worker: heuristic vote", "bodyblocks.extraction.segmenting", "vote_on_tree"),
    ("worker: model inputs", "bodyblocks.classify.onnx_model", "OnnxModelScorer.inputs"),
    ("worker: trees", "bodyblocks.classify.trees", "GbtScorer.scores"),
    ("worker: forward pass", "bodyblocks.classify.onnx_model", "OnnxModelScorer.page_probabilities"),
    ("worker: decision rule", "bodyblocks.extraction.decision", "DecisionRule.decide"),
    ("worker: render", "bodyblocks.batch.outputs", "Renderer.__call__"),
    ("pipe: send", "multiprocessing.connection", "Connection.send"),
    ("pipe: receive", "multiprocessing.connection", "Connection.recv"),
    ("main: Report.write", "bodyblocks.batch.outputs", "Report.write"),
    ("main: write file", "bodyblocks.batch.outputs", "write_atomic"),
    ("main: journal", "bodyblocks.batch.journal", "Journal.append"),
    ("main: report.json", "bodyblocks.batch.outputs", "Report.write_report"),
)


def _child(stats: str, argv: list[str]) -> int:
    """In the profiled process: wrap PARTS, run the command, write this process's (and each worker's) counters."""
    import functools
    import gc
    import importlib
    import time

    acc: collections.Counter[str] = collections.Counter()
    clock = time.process_time

    def wrap(label: str, module: str, attr: str) -> None:
        try:
            owner: object = importlib.import_module(module)
            *path, name = attr.split(".")
            for p in path:
                owner = getattr(owner, p)
            fn = getattr(owner, name)
        except (ImportError, AttributeError):  # not in this revision
            return

        @functools.wraps(fn)
        def timed(*args: object, **kwargs: object) -> object:
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                acc[label] += clock() - t

        setattr(owner, name, timed)

    for part in PARTS:
        wrap(*part)
    gc_start = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc_start[0] = clock()
        else:
            acc[f"gc: generation {info['generation']}"] += clock() - gc_start[0]

    gc.callbacks.append(on_gc)

    def dump(kind: str) -> None:
        acc["process total"] = clock()
        (Path(stats) / f"{kind}-{os.getpid()}.json").write_text(json.dumps({k: v for k, v in acc.items() if v}))

    from bodyblocks.runtime import pool

    run_worker = pool._main

    def worker_main(conn, fn, init, init_args, parent):  # noqa: ANN001, ANN202 - pool._main's
        acc.clear()  # the parent's counts came with the fork
        since = [0.0]

        def task(t: object) -> object:
            if since[0]:
                acc["worker: waiting (wall)"] += time.perf_counter() - since[0]
            try:
                return fn(t)
            finally:
                since[0] = time.perf_counter()
                dump("worker")  # workers are killed at the end: the counters go out after every page

        run_worker(conn, task, init, init_args, parent)

    pool._main = worker_main
    from bodyblocks.cli import main

    try:
        return main(argv)
    finally:
        dump("main")


def _run(src: Path | None, folder: Path, work: Path) -> tuple[float, dict[str, float]]:
    """One profiled command: (its CPU seconds with its workers', the summed counters in seconds)."""
    stats, out = work / "stats", work / "out"
    shutil.rmtree(stats, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    stats.mkdir(parents=True)
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "benchmarks.cli_profile", "--child", str(stats), "--",
           "extract", str(folder), "--out", str(out), "--no-progress", "--no-resume"]
    proc = subprocess.Popen(cmd, env=env, cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-800:] if proc.stderr else ''}")
    summed: collections.Counter[str] = collections.Counter()
    for f in stats.glob("*.json"):
        kind = f.name.split("-")[0]
        for k, v in json.loads(f.read_text()).items():
            summed[k if k.split(":")[0] in ("worker", "main") else f"{kind}: {k}"] += v
    return usage.ru_utime + usage.ru_stime, dict(summed)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1], argv[3:])
    ap = arguments(__doc__, pages=300, rounds=2)
    ap.add_argument("--against", default=None, metavar="REV", help="also that revision, alternating with this tree")
    ap.add_argument("--kind", default="mix", choices=("news", "mix"), help="cli_speed's folder of this kind")
    args = ap.parse_args(argv)
    from benchmarks.cli_speed import write_folder

    work = Path(tempfile.mkdtemp(prefix="bodyblocks-cli-profile-"))
    try:
        folder = work / "pages"
        pages = write_folder(args.kind, folder, args.pages)
        trees: dict[str, Path | None] = {"this tree": None}
        if args.against:
            old = work / "old"
            old.mkdir()
            root = Path(__file__).resolve().parents[1]
            archive = subprocess.run(["git", "archive", args.against, "src", "checkpoints"], cwd=root,
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            trees[args.against] = old / "src"
        runs: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in trees}
        for r in range(args.rounds):
            order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
            for name, src in order:
                runs[name].append(_run(src, folder, work / "run"))
                print(f"round {r + 1}: {name}: {runs[name][-1][0]:.2f} s CPU", file=sys.stderr)
        print(report(runs, pages, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(runs: dict[str, list[tuple[float, dict[str, float]]]], pages: int, args: argparse.Namespace) -> str:
    names = list(runs)
    labels = sorted({k for rs in runs.values() for _, c in rs for k in c},
                    key=lambda k: (k.split(":")[0] != "worker", k.split(":")[0] != "pipe", k))

    def ms(name: str, label: str) -> str:
        values = [c.get(label) for _, c in runs[name] if c.get(label) is not None]
        return f"{statistics.median(values) / pages * 1000:.2f}" if values else "-"

    lines = [f"`python -m benchmarks.cli_profile --kind {args.kind} --pages {args.pages} --rounds {args.rounds}"
             + (f" --against {args.against}`" if args.against else "`") + f": {pages} pages, CPU ms per page "
             "(medians)", "", "| part | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines.append("| whole (every process) | " + " | ".join(
        f"{statistics.median(cpu for cpu, _ in runs[n]) / pages * 1000:.2f}" for n in names) + " |")
    lines += [f"| {label} | " + " | ".join(ms(n, label) for n in names) + " |" for label in labels]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
