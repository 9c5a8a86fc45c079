"""The whole ensemble trained on the gold's targets against the convention's (docs/CONVENTION.md), leave-one-source-out.

    python -m benchmarks.convention_loso --runs runs/loso-blend runs/loso-blend-conv --setting 0.2,0.2,0.45,0.7 \
        --write docs/CONVENTION.md#convention-loso

Each RUN is a `benchmarks.loso_blend` folder whose parts/S.json.gz hold fold S's model and trees' P(body) and the vote
on S's test pages (the parts trained with `--set data.targets=gold` in one run, `convention` in the other, both on
host-disjoint folds). Every fold that all the runs have is replayed with one fixed blend and decision rule (the
setting: model weight, vote weight, threshold, the container's outer threshold and, optionally, its core (0: none,
loso_blend.GRID); the same for every run, so only
the learned parts differ) and scored under the source's own gold convention (evaluate.scored_text), as loso_blend
scores it: token precision, recall, F1 and acc@0.9 per fold, and their mean over those folds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.cache_files import parts_file, read_cached
from benchmarks.common import arguments, write_report
from benchmarks.loso_blend import SOURCES, page_texts
from bodyblocks.metrics import score_page, summarize
from bodyblocks.training.datasets import gold_convention

KEYS = ("token_precision", "token_recall", "token_f1", "acc@0.90")


def scores(run: Path, source: str, setting: tuple[float, ...]) -> tuple[float, ...]:
    """(P, R, F1, acc@0.9) of one run's fold under the setting."""
    pages = read_cached(parts_file(run, source))
    texts = page_texts(pages, setting, gold_convention(source))  # type: ignore[arg-type]
    s = summarize([score_page(p["gold"], t) for p, t in zip(pages, texts, strict=True)])
    return tuple(float(s[k]) for k in KEYS)


def main() -> int:
    ap = arguments(__doc__, write=True)
    ap.add_argument("--runs", type=Path, nargs="+", required=True, help="loso_blend folders with parts/")
    ap.add_argument("--setting", default="0.2,0.2,0.45,0.7",
                    help="model weight, vote weight, threshold, outside[, core] (core 0 or left out: none)")
    args = ap.parse_args()
    try:
        setting = tuple(float(x) for x in args.setting.split(","))
    except ValueError:
        ap.error(f"--setting {args.setting}: four or five numbers")
    if len(setting) not in (4, 5):
        ap.error("--setting: four or five numbers")
    setting = (*setting, 0.0)[:5]
    folds = [s for s in SOURCES if all(parts_file(r, s).exists() for r in args.runs)]
    if not folds:
        ap.error("no fold is in every run")
    res = {(r, s): scores(r, s, setting) for r in args.runs for s in folds}
    lines = [f"Written by benchmarks/convention_loso.py (its docstring says how): the setting {setting} on every run; "
             f"folds every run has: {', '.join(folds)}. Token P / R / F1 / acc@0.9.", "",
             "| left-out source | " + " | ".join(f"`{r}`" for r in args.runs) + " |", "|---|" + "---|" * len(args.runs)]
    for s in [*folds, "mean"]:
        cells = []
        for r in args.runs:
            v = res[r, s] if s != "mean" else tuple(float(np.mean([res[r, f][k] for f in folds])) for k in range(4))
            cells.append(" / ".join(f"{x:.3f}" for x in v))
        lines.append(f"| {'**mean**' if s == 'mean' else s} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(args.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
