"""What a cheaper model shape would give the whole command: `bodyblocks extract` with each shape against trafilatura.

    python -m benchmarks.shape_speed                          # 2,000 pages, 1 round
    python -m benchmarks.shape_speed --pages 500 --rounds 2 --shapes "no context layers" \
        --write docs/SPEED.md#shape-speed

benchmarks/model_cost.py times the forward pass of each shape alone; this runs the whole command a user runs
with each shape in the shipped ensemble, so that the wall-time ratio against trafilatura (the speed
target) is measured rather than worked out. Each shape of model_cost.SHAPES is built as model_cost builds it
(the shipped config with some keys changed, random weights, exported and checked as `bodyblocks export` does)
and put in an ensemble folder that is the shipped one's config.json with its model replaced: the shipped
trees, the shipped blend and decision rule. `bodyblocks extract DIR --out O --no-progress --no-resume` runs
with the shipped ensemble and with `--checkpoint` each shape's ensemble, and `trafilatura --input-dir DIR
--output-dir O`, every command once per round, in turns, as whole processes with their defaults
(benchmarks/cli_speed.timed: wall, CPU of the process and its workers, peak RSS). Pages: common.write_pages.

Random weights cost what trained ones cost: every page goes through the same sessions, the trees, the vote and
the decision rule whatever its probabilities (the heuristic fallback, the one step whose use depends on them,
is off by default). Their text is not the product's, so only the time is reported; what a shape costs in
accuracy is in its leave-one-source-out folds (docs/GENERALIZATION.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.cli_speed import (
    Run,
    bodyblocks_command,
    compile_package,
    median_run,
    timed,
    trafilatura_command,
)
from benchmarks.common import arguments, write_pages, write_report
from benchmarks.model_cost import REFERENCE, SHAPES, build_shape
from bodyblocks.runtime.files import REPO_ROOT

SHIPPED_ENSEMBLE = REPO_ROOT / "checkpoints" / "ensemble"
SHIPPED_GBT = REPO_ROOT / "checkpoints" / "gbt"
OURS = "bodyblocks (shipped ensemble)"
PEER = "trafilatura"


def shape_ensemble(work: Path, index: int, changes: dict[str, object], docs: list) -> Path:
    """An ensemble folder under `work`: the shipped ensemble's config with its model a shape built by
    model_cost.build_shape (random weights, exported) and its trees the shipped ones."""
    model = work / f"model-{index}"
    build_shape(model, changes, docs)
    ensemble = work / f"ensemble-{index}"
    ensemble.mkdir()
    cfg = json.loads((SHIPPED_ENSEMBLE / "config.json").read_text(encoding="utf-8"))
    cfg["model"], cfg["gbt"] = str(model.resolve()), str(SHIPPED_GBT.resolve())
    (ensemble / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return ensemble


def commands(pages: Path, out: Path, ensembles: dict[str, Path]) -> dict[str, list[str]]:
    """The shipped command, one per shape's ensemble, and trafilatura's, each with its own output folder."""
    ours = bodyblocks_command(pages)
    cmds = {OURS: [*ours, "--out", str(out / "shipped")]}
    for i, (name, folder) in enumerate(ensembles.items()):
        cmds[f"bodyblocks, model: {name}"] = [*ours, "--checkpoint", str(folder), "--out", str(out / f"shape{i}")]
    cmds[PEER] = [*trafilatura_command(pages), "--output-dir", str(out / "tr")]
    return cmds


def report(runs: dict[str, list[Run]], pages: int, args: argparse.Namespace) -> str:
    """The table: medians over the rounds, CPU ms per page (fixed cost included) and the ratios to trafilatura."""
    med = {name: median_run(rs) for name, rs in runs.items()}
    peer = med[PEER]
    shapes = f" --shapes {' '.join(repr(s) for s in args.shapes)}" if args.shapes != DEFAULT_SHAPES else ""
    lines = [f"Machine: {os.cpu_count()} cores; `python -m benchmarks.shape_speed --pages {args.pages} --rounds "
             f"{args.rounds}{shapes}`: {pages} pages, medians over the rounds; CPU ms per page is the command's CPU "
             "over the pages (its fixed cost included)", "",
             "| command | wall s | CPU s | CPU ms per page | peak MB | wall: trafilatura / it "
             "| CPU: trafilatura / it |",
             "|---|---|---|---|---|---|---|"]
    for name, m in med.items():
        lines.append(f"| {name} | {m.wall:.2f} | {m.cpu:.2f} | {1000 * m.cpu / pages:.1f} | {m.rss_mb:.0f} | "
                     f"{peer.wall / m.wall:.2f} | {peer.cpu / m.cpu:.2f} |")
    return "\n".join(lines) + "\n"


DEFAULT_SHAPES = [name for name in SHAPES if name != REFERENCE]


def build_all(work: Path, shapes: list[str]) -> int:
    """Each shape's ensemble folder under `work` (ensemble-0, ensemble-1, ... in the order given); the
    export's check runs on the first 20 pages of work/pages."""
    from bodyblocks.page.segment import segment

    docs = [segment(f.read_bytes()) for f in sorted((work / "pages").glob("*.html"))[:20]]
    for i, name in enumerate(shapes):
        shape_ensemble(work, i, SHAPES[name], docs)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, pages=2000, rounds=1, write=True)
    ap.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, choices=list(SHAPES),
                    help="model_cost.SHAPES to run (default: all but the shipped shape)")
    ap.add_argument("--build", type=Path, default=None, help=argparse.SUPPRESS)  # in the child: build, then exit
    args = ap.parse_args(argv)
    if args.build is not None:
        return build_all(args.build, args.shapes)
    if shutil.which("trafilatura") is None:
        print("trafilatura is not installed: pip install 'bodyblocks[peers]'", file=sys.stderr)
        return 2
    compile_package()
    work = Path(tempfile.mkdtemp(prefix="bodyblocks-shape-speed-"))
    try:
        pages = write_pages(work / "pages", args.pages)
        # built in a child process: a process forked from this one after importing torch would start with its
        # RSS, which wait4's peak counts
        subprocess.run([sys.executable, "-m", "benchmarks.shape_speed", "--build", str(work), "--shapes",
                        *args.shapes], check=True)
        ensembles = {name: work / f"ensemble-{i}" for i, name in enumerate(args.shapes)}
        cmds = commands(work / "pages", work / "out", ensembles)
        runs: dict[str, list[Run]] = {name: [] for name in cmds}
        names = list(cmds)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:  # who goes first rotates
                runs[name].append(timed(cmds[name], [work / "out"]))
                print(f"round {r + 1}: {name}: {runs[name][-1]}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = report(runs, pages, args)
    print(text)
    if args.write:
        write_report(args.write, "Written by `python -m benchmarks.shape_speed` (its docstring says how).\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
