"""Some leave-one-source-out folds' parts replayed at fixed blends: two or more sets of fold models compared on the same
trees, vote, decision rule and test pages, without training every fold.

    python -m benchmarks.loso_replay --models runs/loso-recipe runs/loso-recipe10 --trees runs/loso-vocab \
        --folds wcxb-dev dragnet daniel --at wcxb-dev=0.3,0.2,0.45,0.6,0.7 --at dragnet=0.3,0.2,0.45,0.7,0.0 \
        --at daniel=0.4,0.3,0.5,0.7,0.7 --out runs/loso-replay

benchmarks/loso_blend.py chooses each fold's blend on the other folds, so its figure needs every fold's parts. A
change to how the fold models are trained (more epochs, a seed) can be looked at on a few folds first: each fold's
test pages scored with loso_blend's parts (`fold_parts`: the fold's model and trees' P(body) and the heuristic's
vote), blend and decision rule, at
  - the setting `--at` names for the fold (e.g. its nested choice in docs/GENERALIZATION.md), where given;
  - the shipped ensemble's setting (checkpoints/ensemble's metrics.setting);
  - the fold's own best setting of loso_blend's grid (token F1 plus acc@0.9; chosen on the fold's test pages, so
    an upper bound, not a leave-one-source-out figure).
daniel's Chinese pages are scored at daniel's settings. Each models folder's parts are cached in
OUT/<its folder name>/parts/S.json.gz (loso_blend's format). The table goes to standard output and OUT/report.md, and
with `--write FILE#SECTION` into that section of a manual page, under the command that made it.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, write_report
from benchmarks.loso_blend import (
    GRID,
    SOURCES,
    ZH,
    Setting,
    fold_row,
    load_parts,
    log,
    page_scores,
    settings,
    shipped_setting,
)
from bodyblocks.runtime.files import write_atomic


def replay(pages: list[dict[str, Any]], source: str, at: Setting | None, shipped: Setting | None, oracle: bool
           ) -> dict[str, tuple[Setting, dict[str, tuple[float, float] | None]]]:
    """A fold's scores at `at`, at the shipped setting and at its best grid setting: {kind: (setting, scores)}."""
    memo: dict[tuple[str, int, str], Any] = {}

    def scored(setting: Setting) -> dict[str, tuple[float, float] | None]:
        return fold_row(pages, source, page_scores(pages, source, setting, memo))

    out = {}
    for kind, setting in (("at", at), ("shipped", shipped)):
        if setting is not None:
            out[kind] = (setting, scored(setting))
    if oracle:
        grid = {s: scored(s) for s in settings()}
        top = max(grid, key=lambda s: (sum(grid[s][source] or (0.0, 0.0)), (grid[s][source] or (0.0,))[0]))
        out["best"] = (top, grid[top])
    return out


def _cell(pair: tuple[float, float] | None) -> str:
    return "–" if pair is None else f"{pair[0]:.4f} / {pair[1]:.4f}"


def table(results: dict[str, dict[str, dict[str, tuple[Setting, dict[str, Any]]]]], folds: list[str]) -> str:
    """One row per models folder and kind of setting, one column per fold (daniel zh after daniel)."""
    cols = [c for f in folds for c in ([f, ZH] if f == "daniel" else [f])]
    lines = ["| models | setting | " + " | ".join(cols) + " | mean of the folds |",
             "|---|---|" + "---|" * (len(cols) + 1)]
    kinds = {"at": "each fold's `--at`", "shipped": "the shipped ensemble's", "best": "each fold's best (upper bound)"}
    for label, by_fold in results.items():
        for kind, name in kinds.items():
            cells, f1s, accs = [], [], []
            for c in cols:
                fold = "daniel" if c == ZH else c
                got = by_fold[fold].get(kind)
                pair = got[1].get(c) if got else None
                cells.append(_cell(pair))
                if pair is not None and c != ZH:
                    f1s.append(pair[0])
                    accs.append(pair[1])
            if any(c != "–" for c in cells):
                mean = _cell((sum(f1s) / len(f1s), sum(accs) / len(accs))) if len(f1s) == len(folds) else "–"
                lines.append(f"| {label} | {name} | " + " | ".join(cells) + f" | {mean} |")
    chosen = [f"- {label}, fold {f}, its best: {by_fold[f]['best'][0]}" for label, by_fold in results.items()
              for f in folds if "best" in by_fold[f]]
    return "\n".join(lines + ([""] + chosen if chosen else [])) + "\n"


def main() -> int:
    ap = arguments(__doc__, out="runs/loso-replay", write=True)
    ap.add_argument("--models", type=Path, nargs="+", required=True,
                    help="folders of fold folders holding model/ (each a row set, named by its folder name)")
    ap.add_argument("--trees", type=Path, default=Path("runs/loso-vocab"), help="fold folders holding gbt/")
    ap.add_argument("--folds", nargs="+", choices=SOURCES, default=list(SOURCES))
    ap.add_argument("--at", action="append", default=[], metavar="FOLD=W,H,T,O,C",
                    help="a fold's setting (model weight, vote weight, threshold, container's outer threshold, core)")
    ap.add_argument("--no-best", action="store_true", help="skip each fold's best over the grid (288 settings)")
    args = ap.parse_args()
    at: dict[str, Setting] = {}
    for item in args.at:
        fold, _, values = item.partition("=")
        if fold not in args.folds:
            ap.error(f"--at {item}: {fold!r} is not one of --folds")
        try:
            setting = tuple(float(v) for v in values.split(","))
        except ValueError:
            setting = ()
        if len(setting) != len(GRID):
            ap.error(f"--at {item}: expected FOLD=W,H,T,O,C (five numbers)")
        at[fold] = setting  # type: ignore[assignment]
    names = [m.name for m in args.models]
    if len(set(names)) != len(names):
        ap.error("--models: two folders of the same name")
    shipped = shipped_setting()
    results: dict[str, dict[str, Any]] = {}
    for models in args.models:
        parts = load_parts(args.out / models.name, models, args.trees, tuple(args.folds))
        results[models.name] = {}
        for fold in args.folds:
            log(f"{models.name}: replaying fold {fold}")
            results[models.name][fold] = replay(parts[fold], fold, at.get(fold), shipped, not args.no_best)
    argv = [a for a in sys.argv[1:] if not a.startswith("--write=")]
    if "--write" in argv:  # the command as it makes the table, less where it was written
        del argv[argv.index("--write"):argv.index("--write") + 2]
    text = (f"Written by benchmarks/loso_replay.py (its docstring says how). Token F1 / acc@0.9 on each fold's test "
            f"pages.\n\nCommand: `python -m benchmarks.loso_replay {shlex.join(argv)}`\n\n"
            + table(results, list(args.folds)))
    print(text)
    write_atomic(args.out / "report.md", text)
    write_report(args.write, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
