"""Fine-tuning on your own sites, measured on the gne-pages gold set: `bodyblocks finetune` on half of the sites,
before / after on the other half, for a few seeds (each seed another split by site) and settings.

    python -m benchmarks.finetune_gne --seeds 0 1 --write docs/ANNOTATION.md#finetune           # runs, then the report
    python -m benchmarks.finetune_gne --variant same-site --seeds 0 1          # and --variant same-language
    python -m benchmarks.finetune_gne --report-only --runs RUN [RUN ...] --write FILE   # the report of any runs

A run is `bodyblocks finetune ../shared/datasets/gne-pages --labels data/annotations/gne-pages --out RUN
--seed S [--user-share U --epochs E]` (about 10 minutes on 2 cores). The report takes each run's
finetune.json: the shipped ensemble ("before"), the fine-tuned one (OUT/tuned) and the one the run kept by
its validation score (OUT/ensemble), on the held-out pages.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, write_report
from bodyblocks.runtime.files import REPO_ROOT, datasets_root
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.finetune import finetune, repeats


def same_site(split: dict[str, Any], pages: list[CachedPage], base: dict[str, list[CachedPage]]) -> dict[str, Any]:
    """Every other page of each held-out site with two pages or more moves to the training pages: fine-tuning on
    some pages of the sites it is then scored on (the held-out pages are still never trained on)."""
    site = {cp.id: cp.site for cp in pages}
    by_site: dict[str, list[str]] = {}
    for pid in split["held_out"]:
        by_site.setdefault(site[pid], []).append(pid)
    moved = [pid for ids in by_site.values() if len(ids) > 1 for pid in ids[0::2]]
    out = {**split, "train": split["train"] + moved, "held_out": [p for p in split["held_out"] if p not in moved]}
    out["sites"] = {**split["sites"], "train": sorted(set(split["sites"]["train"]) | {site[p] for p in moved})}
    out["repeat"], out["val_repeat"] = repeats(len(split["base_train"]), len(out["train"]), len(split["base_val"]),
                                               len(split["val"]), USER_SHARE)
    return out


def same_language(split: dict[str, Any], pages: list[CachedPage], base: dict[str, list[CachedPage]]
                  ) -> dict[str, Any]:
    """The mix is every page of the base model's training and validation pages in the user's languages (on
    gne-pages: daniel's Chinese pages, whose convention keeps the headline as ours does) instead of a sample
    of all of them."""
    langs, sites = {cp.lang for cp in pages}, {cp.site for cp in pages}
    mixed = {part: [[cp.dataset, cp.id] for cp in base[part] if cp.lang in langs and cp.site not in sites]
             for part in ("train", "val")}
    out = {**split, "base_train": mixed["train"], "base_val": mixed["val"]}
    out["repeat"], out["val_repeat"] = repeats(len(mixed["train"]), len(split["train"]), len(mixed["val"]),
                                               len(split["val"]), USER_SHARE)
    return out


VARIANTS = {"same-site": same_site, "same-language": same_language}
USER_SHARE = inspect.signature(finetune).parameters["user_share"].default  # the variants run with it


def run(seed: int, out: Path, extra: list[str], variant: str | None = None) -> None:
    root = datasets_root()
    if root is None:
        raise SystemExit("finetune_gne: no datasets folder (set BODYBLOCKS_DATASETS)")
    dataset, labels = root / "gne-pages", REPO_ROOT / "data/annotations/gne-pages"
    if variant is None:
        cmd = ["bodyblocks", "finetune", str(dataset), "--labels", str(labels), "--out", str(out), "--seed", str(seed),
               "--no-progress", *extra]
        print(" ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
        return
    if extra:
        raise SystemExit(f"finetune_gne: --variant {variant} runs with bodyblocks finetune's defaults")
    print(f"finetune({dataset}, {out}, labels={labels}, seed={seed}, adjust_split={VARIANTS[variant].__name__})",
          file=sys.stderr)
    finetune(dataset, out, labels=labels, seed=seed, progress=False, adjust_split=VARIANTS[variant])


def _f(x: dict[str, Any]) -> str:
    return f"{x['token_f1']:.3f} / {x['token_precision']:.3f} / {x['token_recall']:.3f} / {x['acc@0.90']:.3f}"


def report(runs: list[Path]) -> str:
    rows = ["| run | held-out pages | shipped (before) | fine-tuned | kept by validation | kept | headline step |",
            "|---|---|---|---|---|---|---|"]
    ratios = []  # (run, mean Levenshtein ratio before, fine-tuned) of the runs with the headline step on
    deltas = []
    moves = []  # (precision, recall, acc@0.9) of the fine-tuned one against the shipped one
    for folder in runs:
        res = json.loads((folder / "finetune.json").read_text(encoding="utf-8"))
        split = json.loads((folder / "split.json").read_text(encoding="utf-8"))
        held, tuned = res["held_out"], res.get("held_out_tuned", res["held_out"])
        train = json.loads((folder / "run" / "best" / "config.json").read_text(encoding="utf-8"))["train_config"]
        stages = folder / "stages.json"
        o = json.loads(stages.read_text(encoding="utf-8"))["options"] if stages.is_file() else None
        variant = {v.__name__: k for k, v in VARIANTS.items()}.get((o or {}).get("adjust_split"))
        settings = ((f"--variant {variant}, " if variant else "")
                    + f"seed {split['seed']}, --mix {len(split['base_train'])}, --epochs {train['epochs']}, "
                    f"your pages x{split['repeat']}, warm-up {train['warmup_steps']} steps"
                    + (f", --user-share {o['user_share']}" if o else ""))
        tuned_meta = json.loads((folder / "tuned" / "config.json").read_text(encoding="utf-8"))
        step = "on" if tuned_meta.get("headline") else "off" if "headline" in tuned_meta else "–"
        if step == "on":
            ratios.append((folder.name, held["before"]["mean_ratio"], tuned["after"]["mean_ratio"]))
        rows.append(f"| {folder.name} ({settings}) | {held['pages']} | {_f(held['before'])} | {_f(tuned['after'])} | "
                    f"{_f(held['after'])} | {res['choice']['kept']} | {step} |")
        deltas.append((tuned["after"]["token_f1"] - held["before"]["token_f1"],
                       held["after"]["token_f1"] - held["before"]["token_f1"]))
        moves.append(tuple(tuned["after"][k] - held["before"][k]
                           for k in ("token_precision", "token_recall", "acc@0.90")))
    lines = [
        "# Fine-tuning on your own sites (gne-pages)", "",
        "Generated by `python -m benchmarks.finetune_gne` (this page: `--report-only`, its docstring has the runs'",
        "commands). Each run fine-tunes the shipped ensemble with `bodyblocks finetune` on the pages of half of the",
        "62 gne-pages' sites (their block labels: data/annotations/gne-pages), and scores the other half's pages;",
        "a seed is another split by site. Token F1 / precision / recall / accuracy at Levenshtein ratio >= 0.9 on",
        "the held-out pages, for the shipped ensemble, the fine-tuned one (OUT/tuned), and the one the run kept",
        "(OUT/ensemble: the fine-tuned one only when it scores higher on the validation pages). `headline step`:",
        "whether stage 4 turned on the decision rule's headline step (keep the block that matches the page's",
        "title) because it scores higher on the user's validation pages; `–`: a run made before the step existed.",
        "",
        *rows, "",
        "Change in token F1 against the shipped ensemble: fine-tuned "
        + ", ".join(f"{a:+.3f}" for a, _ in deltas) + "; kept " + ", ".join(f"{b:+.3f}" for _, b in deltas) + ".",
        "",
        f"In {sum(a > 0.0005 for a, _ in deltas)} of {len(deltas)} runs the fine-tuned ensemble has a higher token F1 "
        f"on the held-out pages than the shipped one (the largest change: {max(a for a, _ in deltas):+.3f}). It has a "
        f"higher precision in {sum(m[0] > 0 for m in moves)}, a lower recall in {sum(m[1] < 0 for m in moves)} and a "
        f"higher accuracy at 0.9 in {sum(m[2] > 0 for m in moves)}.",
        "",
        *(["Mean Levenshtein ratio on the held-out pages, the shipped ensemble's -> the fine-tuned one's, in the runs "
           "with the headline step on: " + ", ".join(f"{name} {a:.3f} -> {b:.3f}" for name, a, b in ratios) + ".", ""]
          if ratios else []),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, write=True)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1])
    ap.add_argument("--runs", nargs="*", default=None, help="run folders to report (default: the seeds' folders)")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default=None,
                    help="same-site: train on half the pages of the held-out sites too; same-language: the mix is "
                         "the base pages in the user's languages (both with finetune's defaults)")
    ap.add_argument("--report-only", action="store_true")
    args, extra = ap.parse_known_args(argv)
    name = f"finetune-gne-{args.variant}" if args.variant else "finetune-gne"
    runs = [Path(r) for r in args.runs] if args.runs else [REPO_ROOT / f"runs/{name}-s{s}" for s in args.seeds]
    if not args.report_only:
        for seed, folder in zip(args.seeds, runs, strict=False):
            if not (folder / "finetune.json").is_file():
                run(seed, folder, extra, args.variant)
    text = report(runs)
    print(text)
    write_report(args.write, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
