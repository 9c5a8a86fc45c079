"""One leave-one-source-out fold, several variants of the model, the same trees and vote: blended figures on the
fold's test pages at fixed blend settings (those loso_blend chose for the fold from the other folds), and the grid's
best on the fold (not a LOSO figure: chosen on these pages).

    python -m benchmarks.teacher_fold --fold wcxb-dev --trees runs/t43/loso-vocab \
        --variant recipe=runs/t43/loso-recipe --variant student=runs/t43/loso-student --variant e5=runs/t43/loso-e5 \
        --setting 0.2,0.2,0.45,0.6 --setting 0.4,0.2,0.5,0.6 --out runs/t43/fold-wcxb-dev

A variant may have its own trees (`--trees-of NAME=DIR`, e.g. trees with other inputs) and may take its model's
P(body), the vote and the segmented pages from another variant's cached parts (`--same-model-as NAME=OTHER`): only
its trees then walk the fold's pages again (issue 43's role features):

    python -m benchmarks.teacher_fold --fold wcxb-dev --trees runs/t43/loso-vocab \
        --variant recipe=runs/t43/loso-recipe --variant roles=runs/t43/loso-recipe \
        --trees-of roles=runs/t43/loso-roles --same-model-as roles=recipe \
        --setting 0.2,0.2,0.45,0.6 --out runs/t43/fold-roles-wcxb-dev

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
from bodyblocks.inference.gbt import GbtModel
from bodyblocks.metrics import score_page
from bodyblocks.training.datasets import GoldConvention, gold_convention


def scores(pages: list, setting: tuple[float, ...], memo: dict | None = None,
           convention: GoldConvention | None = None) -> tuple[float, float]:
    """(token F1, acc@0.9) of the fold's pages under a blend setting, scored by the source's gold `convention` as
    loso_blend scores them (`memo`: each page's score by its text)."""
    memo = {} if memo is None else memo
    out = []
    for i, (p, text) in enumerate(zip(pages, page_texts(pages, setting, convention), strict=True)):
        if (i, text) not in memo:
            memo[(i, text)] = score_page(p["gold"], text)
        out.append(memo[(i, text)])
    return _summary(out)


def with_trees(pages: list, trees: Path) -> list:
    """`pages` (fold_parts' rows) with the P(body) of the trees in folder `trees` in place of theirs."""
    model = GbtModel.load(trees)
    return [{**p, "gbt": model.page_probabilities(p["doc"].blocks)} if "gbt" in p else p for p in pages]


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """NAME=VALUE items of a repeatable option as a dict."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SystemExit(f"{flag} wants NAME=VALUE, not {item!r}")
        out[name] = value
    return out


def main() -> int:
    ap = arguments(__doc__, out="runs/teacher-fold")
    ap.add_argument("--fold", required=True, help="the left-out source")
    ap.add_argument("--trees", type=Path, required=True, help="fold folders holding gbt/")
    ap.add_argument("--variant", action="append", required=True, metavar="NAME=DIR",
                    help="a variant's fold folders holding model/ (repeatable)")
    ap.add_argument("--setting", action="append", default=[], metavar="W,H,T,O",
                    help="a blend setting: model weight, vote weight, threshold, container's outer threshold")
    ap.add_argument("--trees-of", action="append", default=[], metavar="NAME=DIR",
                    help="a variant's own fold folders holding gbt/ (else --trees; repeatable)")
    ap.add_argument("--same-model-as", action="append", default=[], metavar="NAME=OTHER",
                    help="take a variant's pages, model P(body) and vote from OTHER's cached parts (listed before "
                         "it), its trees walked again (repeatable)")
    ap.add_argument("--no-grid", action="store_true", help="skip the grid's best on the fold")
    args = ap.parse_args()
    trees_of = {k: Path(v) for k, v in pairs(args.trees_of, "--trees-of").items()}
    same_model = pairs(args.same_model_as, "--same-model-as")
    convention = gold_convention(args.fold)
    fixed = [tuple(float(x) for x in s.split(",")) for s in args.setting]
    lines = ["| variant | " + " | ".join(str(s) for s in fixed) + ("" if args.no_grid else " | grid's best on the fold")
             + " |", "|---|" + "---|" * (len(fixed) + (not args.no_grid))]
    for item in args.variant:
        name, _, folder = item.partition("=")
        path = args.out / f"parts-{name}.pkl"
        trees = trees_of.get(name, args.trees)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            if name in same_model:
                log(f"{name}: {same_model[name]}'s parts, the trees of {trees}")
                other = pickle.loads((args.out / f"parts-{same_model[name]}.pkl").read_bytes())
                parts = with_trees(other, trees / args.fold / "gbt")
            else:
                log(f"{name}: the fold's parts on its test pages")
                parts = fold_parts(args.fold, Path(folder), trees)
            write_atomic(path, pickle.dumps(parts))
        pages = pickle.loads(path.read_bytes())
        memo: dict = {}
        cells = [scores(pages, s, memo, convention) for s in fixed]
        if not args.no_grid:
            grid = {s: scores(pages, s, memo, convention) for s in settings()}
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
