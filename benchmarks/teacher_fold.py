"""One leave-one-source-out fold, several variants of the model, the same trees and vote: blended figures on the
fold's test pages at fixed blend settings (those loso_blend chose for the fold from the other folds), and the grid's
best on the fold (not a LOSO figure: chosen on these pages).

    python -m benchmarks.teacher_fold --fold wcxb-dev --trees runs/t43/loso-vocab \
        --variant recipe=runs/t43/loso-recipe --variant student=runs/t43/loso-student --variant e5=runs/t43/loso-e5 \
        --setting 0.2,0.2,0.45,0.6 --setting 0.4,0.2,0.5,0.6 --out runs/t43/fold-wcxb-dev

loso_blend's nested choice needs every fold's parts; a run that trains one fold only (the noisy-student experiment
of issue 43, training/teacher.py) scores it at the settings the recorded six-fold runs chose for that fold instead,
every variant at the same settings. Parts are cached per variant (OUT/parts-VARIANT.pkl).
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from benchmarks.common import arguments
from benchmarks.loso_blend import _summary, fold_parts, log, page_texts, settings
from bodyblocks.files import write_atomic
from bodyblocks.metrics import score_page


def scores(pages: list, setting: tuple[float, ...], memo: dict | None = None) -> tuple[float, float]:
    """(token F1, acc@0.9) of the fold's pages under a blend setting (`memo`: each page's score by its text)."""
    memo = {} if memo is None else memo
    out = []
    for i, (p, text) in enumerate(zip(pages, page_texts(pages, setting), strict=True)):
        if (i, text) not in memo:
            memo[(i, text)] = score_page(p["gold"], text)
        out.append(memo[(i, text)])
    return _summary(out)


def main() -> int:
    ap = arguments(__doc__, out="runs/teacher-fold")
    ap.add_argument("--fold", required=True, help="the left-out source")
    ap.add_argument("--trees", type=Path, required=True, help="fold folders holding gbt/")
    ap.add_argument("--variant", action="append", required=True, metavar="NAME=DIR",
                    help="a variant's fold folders holding model/ (repeatable)")
    ap.add_argument("--setting", action="append", default=[], metavar="W,H,T,O",
                    help="a blend setting: model weight, vote weight, threshold, container's outer threshold")
    ap.add_argument("--no-grid", action="store_true", help="skip the grid's best on the fold")
    args = ap.parse_args()
    fixed = [tuple(float(x) for x in s.split(",")) for s in args.setting]
    lines = ["| variant | " + " | ".join(str(s) for s in fixed) + ("" if args.no_grid else " | grid's best on the fold")
             + " |", "|---|" + "---|" * (len(fixed) + (not args.no_grid))]
    for item in args.variant:
        name, _, folder = item.partition("=")
        path = args.out / f"parts-{name}.pkl"
        if not path.exists():
            log(f"{name}: the fold's parts on its test pages")
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, pickle.dumps(fold_parts(args.fold, Path(folder), args.trees)))
        pages = pickle.loads(path.read_bytes())
        memo: dict = {}
        cells = [scores(pages, s, memo) for s in fixed]
        if not args.no_grid:
            grid = {s: scores(pages, s, memo) for s in settings()}
            top = max(grid, key=lambda s: grid[s])
            cells.append(grid[top])
        row = " | ".join(f"{f:.3f} / {a:.3f}" for f, a in cells)
        lines.append(f"| {name} | {row}" + ("" if args.no_grid else f" {top}") + " |")
        print(lines[-1], flush=True)
    text = f"Fold {args.fold} ({len(pages)} test pages), token F1 / acc@0.9:\n\n" + "\n".join(lines) + "\n"
    write_atomic(args.out / "report.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
