"""What each role step of the decision rule costs and gains on sources the learned parts never saw.

    python -m benchmarks.role_ablation --blend runs/loso-blend --write docs/CONVENTION.md#role-ablation

Reads a `benchmarks.loso_blend` run (BLEND/parts/S.json.gz: each fold's model and trees' P(body) and the heuristic's
vote on the fold's test pages, its parts trained without the source's sites; BLEND/grid.json.gz: the grid's scores)
and replays the decision rule (extraction/decision.py) on every fold's test pages with each fold's own blend (the
nested choice: chosen on the *other* folds), first with every step on, then with one role step off at a time:

  headline     the headline block stays in the body (decision.headline_block finds none)
  byline       bylines/datelines next to the headline stay (roles.byline_blocks)
  standfirst   the dek stays (roles.standfirst_block)
  promo        short ad-labelled lines stay (roles.is_promo)
  key-points   a story's key points box stays (AblatedRule.key_points off: roles.key_points)
  captions     captions and photo credits stay (AblatedRule.captions off)
  comments     comment containers stay (DecisionRule.comments on, `--comments`)
  sidebar      a sidebar's widgets stay (AblatedRule.sidebars off)

and the same with the trees alone (the model's and the vote's weights 0, the fold's threshold). Per row: token F1
/ acc@0.9 on each fold's test pages under its source's own gold convention (evaluate.scored_text: what a source's
gold holds besides the body put back), their mean over the six folds, and, pooled over every fold's pages (and
by fold), the share of the characters kept as body (Extraction.kept) in blocks not in the gold
(training/labels.align_blocks against the gold text), then that share by the block's role
(training/roles.block_roles, from the gold text's alignment; L3S-GN1's own block classes and wcxb-dev's listing
pages are not read here).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cache_files import SUFFIX, parts_file, read_cached
from benchmarks.common import arguments, write_report
from benchmarks.loso_blend import SOURCES, load_grid, nested_choice, page_decision, rule_of
from benchmarks.rule_steps import ablated
from bodyblocks.evaluation.evaluate import scored_text
from bodyblocks.extraction import decision, roles
from bodyblocks.metrics import score_page, summarize
from bodyblocks.training.datasets import gold_convention
from bodyblocks.training.labels import align_blocks
from bodyblocks.training.targets import ROLES, block_roles

_SCORED: dict[tuple[str, str, str], Any] = {}
STEPS = ("headline", "byline", "standfirst", "promo", "key-points", "captions", "comments", "sidebar")
SHOWN_ROLES = ("caption", "related", "promo", "share", "comment", "navigation", "sidebar", "key_points", "byline",
               "headline", "other")


@contextlib.contextmanager
def step_off(step: str | None) -> Iterator[Callable[[decision.DecisionRule], decision.DecisionRule]]:
    """While inside: the decision rule without one role step (None: every step on); yields the change to a rule."""
    patches: list[tuple[Any, str, Any]] = []
    rule_change: Callable[[decision.DecisionRule], decision.DecisionRule] = lambda r: r  # noqa: E731
    if step == "headline":
        patches.append((decision, "headline_block", lambda *a, **k: None))
    elif step == "byline":
        patches.append((roles, "byline_blocks", lambda *a, **k: []))
    elif step == "standfirst":
        patches.append((roles, "standfirst_block", lambda *a, **k: None))
    elif step == "promo":
        patches.append((roles, "is_promo", lambda *a, **k: False))
    elif step == "captions":
        rule_change = lambda r: ablated(r, captions=False)  # noqa: E731
    elif step == "comments":
        rule_change = lambda r: dataclasses.replace(r, comments=True)  # noqa: E731
    elif step == "sidebar":
        rule_change = lambda r: ablated(r, sidebars=False)  # noqa: E731
    elif step == "key-points":
        rule_change = lambda r: ablated(r, key_points=False)  # noqa: E731
    elif step is not None:
        raise ValueError(f"unknown step {step!r}")
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, value in patches:
            setattr(obj, name, value)
        yield rule_change
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)


def page_roles(page: dict[str, Any]) -> tuple[list[int], list[str]] | None:
    """A part's page: its blocks' gold labels (aligned with the gold text) and roles; None without blocks."""
    doc = page["doc"]
    if doc is None or not doc.blocks or not page["gold"]:
        return None
    gold = align_blocks(doc.blocks, page["gold"]).labels
    return gold, block_roles(doc.blocks, gold, doc.title, doc.extra.get(roles.DESCRIPTIONS, ()))


def replay(parts: dict[str, list[dict[str, Any]]], settings: dict[str, Any], labels: dict[str, list[Any]],
           step: str | None, trees: bool = False) -> dict[str, Any]:
    """One row: each fold's (token F1, acc@0.9) and the kept characters by gold label and role."""
    folds: dict[str, tuple[float, float]] = {}
    by_role: Counter[str] = Counter()
    by_source: dict[str, list[int]] = {}  # kept characters, those not in the gold
    with step_off(step) as change:
        for source in SOURCES:
            setting = settings[source]
            if trees:
                setting = (0.0, 0.0, *setting[2:])
            blend, rule = rule_of(setting)
            rule = change(rule)
            convention = gold_convention(source)
            scores = []
            for page, lab in zip(parts[source], labels[source], strict=True):
                d = page_decision(page, blend, rule)
                text = scored_text(d[1], convention) if d is not None else ""
                key = (source, page["id"], text)  # a step off changes few pages: each text scored once
                if key not in _SCORED:
                    _SCORED[key] = score_page(page["gold"], text)
                scores.append(_SCORED[key])
                if d is None or lab is None:
                    continue
                gold, role = lab
                mine = by_source.setdefault(source, [0, 0])
                for i in d[1].kept or []:
                    n = page["doc"].blocks[i].text_len
                    mine[0] += n
                    if not gold[i]:
                        mine[1] += n
                        by_role[role[i]] += n
            s = summarize(scores)
            folds[source] = (float(s["token_f1"]), float(s["acc@0.90"]))
    return {"folds": folds, "kept": sum(k for k, _ in by_source.values()),
            "not_gold": sum(n for _, n in by_source.values()), "by_role": dict(by_role), "by_source": by_source}


def table(rows: dict[str, dict[str, Any]], blend: Path) -> str:
    """The report: scores per fold and mean, then the kept-but-not-gold shares by role."""
    head = ["| decision rule | " + " | ".join(SOURCES) + " | mean | Δ mean F1 |", "|---|" + "---|" * (len(SOURCES) + 2)]
    base: dict[str, float] = {}
    lines = [f"Written by benchmarks/role_ablation.py (its docstring says how) from `{blend}`: each fold's parts "
             "trained without its source's sites, each fold's blend chosen on the other folds. Token F1 / acc@0.9 on "
             "each source's test pages under its own gold convention.", "", *head]
    for name, r in rows.items():
        f1 = float(np.mean([r["folds"][f][0] for f in SOURCES]))
        acc = float(np.mean([r["folds"][f][1] for f in SOURCES]))
        family = "trees" if name.startswith("trees") else "ensemble"
        base.setdefault(family, f1)
        cells = " | ".join(f"{r['folds'][f][0]:.3f} / {r['folds'][f][1]:.3f}" for f in SOURCES)
        lines.append(f"| {name} | {cells} | {f1:.3f} / {acc:.3f} | {f1 - base[family]:+.4f} |")
    shown = [x for x in SHOWN_ROLES if x in ROLES]
    lines += ["", "Of the characters kept as body, pooled over the six folds' test pages: the share in blocks not in "
              "the gold, and that share by the block's role.", "",
              "| decision rule | kept chars | not in the gold | " + " | ".join(shown) + " |",
              "|---|---|---|" + "---|" * len(shown)]
    for name, r in rows.items():
        total = max(1, r["kept"])
        lines.append(f"| {name} | {r['kept']:,} | {r['not_gold'] / total:.2%} | "
                     + " | ".join(f"{r['by_role'].get(x, 0) / total:.2%}" for x in shown) + " |")
    lines += ["", "The same share by left-out source (every step on):", "",
              "| decision rule | " + " | ".join(SOURCES) + " |", "|---|" + "---|" * len(SOURCES)]
    for name, r in rows.items():
        if name.endswith("every step"):
            lines.append(f"| {name} | " + " | ".join(
                f"{r['by_source'][f][1] / max(1, r['by_source'][f][0]):.2%}" if f in r["by_source"] else "-"
                for f in SOURCES) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = arguments(__doc__, write=True)
    ap.add_argument("--blend", type=Path, default=Path("runs/loso-blend"),
                    help="a loso_blend run (parts/, grid.json.gz)")
    ap.add_argument("--steps", nargs="*", default=list(STEPS), choices=STEPS, help="the steps turned off, a row each")
    args = ap.parse_args()
    grid = load_grid(args.blend / f"grid{SUFFIX}")
    if not grid:
        ap.error(f"{args.blend / f'grid{SUFFIX}'}: no scores under today's decision rule "
                 "(run benchmarks.loso_blend first)")
    settings = nested_choice(grid)
    parts = {s: read_cached(parts_file(args.blend, s)) for s in SOURCES}
    labels = {s: [page_roles(p) for p in pages] for s, pages in parts.items()}
    rows: dict[str, dict[str, Any]] = {}
    for trees in (False, True):
        family = "trees alone" if trees else "ensemble"
        rows[f"{family}, every step"] = replay(parts, settings, labels, None, trees)
        for step in args.steps:
            rows[f"{family}, without {step}"] = replay(parts, settings, labels, step, trees)
            print(f"{family}, without {step}: done", flush=True)
    text = table(rows, args.blend)
    print(text)
    write_report(args.write, text, {k: {**v, "folds": {f: list(x) for f, x in v["folds"].items()}}
                                    for k, v in rows.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
