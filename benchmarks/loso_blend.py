"""One blend for every source, chosen leave-one-source-out: the ensemble's weights and rule picked by how the folds'
parts do on sources they never saw, with each fold's own figure from a blend chosen without it.

    python -m benchmarks.loso_blend                                   # runs/loso models, runs/loso-vocab trees
    python -m benchmarks.loso_blend --trees runs/loso --out runs/loso-blend-hashed \
        --doc runs/loso-blend-hashed/report.md                   # the hashed buckets' trees
    python -m benchmarks.loso_blend --report-only                     # the doc again from the cached scores
    python -m benchmarks.loso_blend --report-only --ensemble checkpoints/ensemble --model checkpoints/default \
        --gbt checkpoints/gbt                                         # an ensemble folder with the chosen blend

benchmarks/loso.py tunes each fold's blend on the validation pages of the fold's own training sources. Those pages
come from the same sources as the training pages, so the tuned blend learns their gold conventions rather than what
holds on a new source (tuned on validation, the trees with the token vocabulary lost the gain they show
alone). Here the blend is one setting of a small grid (GRID: the model's weight, the vote's, the
threshold, the container step's outer threshold and its core: 0 none, else the P(body) of the blocks the container is
found from when they hold CORE_SHARE of the kept text), chosen by its worst shortfall on any fold's left-out test
pages against the grid's best there, token F1 plus acc@0.9 (OBJECTIVE),
each fold scored with its own parts (trained without its source's sites):

  1. parts/S.json.gz  for every fold S, each of S's test pages with the P(body) of S's model and trees and the
                   heuristic's vote (the fold's parts are --models/S/model and --trees/S/gbt);
  2. nested choice for fold S's own figure, the setting with the best OBJECTIVE over the *other* folds, each of them
                   scored without its test pages from a site of S (hosts.Unseen: any page of S's registrable domains,
                   and any page with no host), so that no page of S, nor of S's sites, takes part in choosing the
                   blend that S is scored with; ties go to the mean token F1 plus acc@0.9, then token F1;
  3. shipped choice the setting with the best OBJECTIVE over all folds: the blend for a model trained on every source
                   (`--ensemble`: written into an ensemble folder, with the best setting without the vote as its
                   `without_vote`).

The doc has each fold's figure (nested), the peers' on the same pages (runs/loso/S/eval-*.json), the setting each
fold got, and the best settings of the grid over all folds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import rule_steps
from benchmarks.cache_files import SUFFIX, parts_file, read_cached, write_cached
from benchmarks.common import arguments, write_report
from benchmarks.rule_steps import ablated
from bodyblocks.classify.blend import Blend
from bodyblocks.evaluation.evaluate import iter_selected, scored_text, select
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.extraction.vote import VOTE
from bodyblocks.metrics import score_page, summarize
from bodyblocks.runtime.files import REPO_ROOT
from bodyblocks.training.datasets import GoldConvention, gold_convention, resolve_dataset, site_of
from bodyblocks.training.hosts import registrable, unseen_sites
from bodyblocks.types import Extraction

SOURCES = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")
ZH = "daniel zh"  # daniel's Chinese pages, reported apart (not a fold of their own)
PEERS = ("heuristic", "trafilatura", "readability", "gne")  # each with its headline, and on its body alone
RESCUE = 0.15  # the rescue threshold of every tuned rule (training/tune.MIN_RESCUE)
CONTAINER = (0.6, 0.3)  # the container step's share and inner threshold (what every fold's tuning chose)
CORE_SHARE = 0.3  # the container step's core holds at least this share of the kept text (extraction/decision.core_mask)
RULE_VERSION = 10  # of the rest of the decision rule, in the grid's cache: raise it when the rule's choices change
GRID = {  # model weight, vote weight, threshold, container outer threshold, container core (0: none)
    "weight": (0.2, 0.3, 0.4, 0.5),
    "vote": (0.0, 0.1, 0.2, 0.3),  # 0.0: the settings of an ensemble run without the vote (--no-vote)
    "threshold": (0.4, 0.45, 0.5),
    "outside": (0.5, 0.6, 0.7),
    "core": (0.0, 0.7),
}
Setting = tuple[float, float, float, float, float]
# what a blend is chosen by: of token F1 plus acc@0.9 on each fold, its largest shortfall against the grid's best
# setting on that fold, the smallest wins (ties: the mean of F1 plus acc@0.9, then the mean F1). The means alone
# choose on a flat ridge, where settings 0.001 apart on the other folds' mean are 0.05 apart on the left-out source;
# a blend that must hold on sources never seen is chosen by the source it serves worst (docs/GENERALIZATION.md,
# "The blend's objective")
OBJECTIVE = "the smallest worst shortfall of token F1 plus acc@0.9 on any fold against the grid's best there"
SHIPPED = REPO_ROOT / "checkpoints" / "ensemble" / "config.json"  # its metrics.setting: the blend in every report
# the decision rule's caption step, threads of repeated posts, comment sections found by their heading, the rescue
# after the roles, the sidebar step and the key points step (--no-captions, --no-repeated-posts,
# --no-comment-headings, --no-role-rescue, --no-sidebars, --no-key-points: off, ablations)
STEPS = dict.fromkeys(rule_steps.STEPS, True)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def grid_values(items: list[str]) -> dict[str, tuple[float, ...]]:
    """`--grid KEY=V,V` items as GRID entries (ValueError for a key GRID lacks or a value that is not a number)."""
    out = {}
    for item in items:
        key, _, values = item.partition("=")
        try:
            if key not in GRID:
                raise ValueError
            out[key] = tuple(float(v) for v in values.split(","))
        except ValueError:
            raise ValueError(f"--grid {item}: expected one of {', '.join(GRID)}=V,V (numbers)") from None
    return out


def settings() -> list[Setting]:
    """Every setting of GRID whose weights leave the trees a share (w + h < 1)."""
    return [s for s in itertools.product(*GRID.values()) if s[0] + s[1] < 1.0 - 1e-9]


def rule_meta(setting: Setting) -> dict[str, Any]:
    """The decision rule of a setting as an ensemble's config.json holds it (its blend's model weight included)."""
    w, _, t, outside, core = setting
    box = [*CONTAINER, max(outside, t)] + ([core, CORE_SHARE] if core else [])
    return {"weight": w, "threshold": t, "rescue": RESCUE, "container": box, "confident": max(t, 0.5)}


def rule_of(setting: Setting) -> tuple[Blend, DecisionRule]:
    rule = DecisionRule.from_meta(rule_meta(setting))
    return Blend(setting[0], setting[1]), ablated(rule, **STEPS)


# ------------------------------------------------------------------------------------------- 1. parts
def fold_parts(source: str, models: Path, trees: Path) -> list[dict[str, Any]]:
    """Each test page of `source` with the fold's model and trees' P(body) and the vote (BlockExtractor steps, of
    an ensemble of the two whose blend and rule do not matter here)."""
    import tempfile

    from bodyblocks.loading.checkpoints import load_extractor
    from bodyblocks.training.tune import write_ensemble_folder

    pages = []
    with tempfile.TemporaryDirectory() as tmp:  # (the ensemble's paths to its parts go through it)
        setting = (0.4, 0.2, 0.5, 0.6, 0.0)  # any with the vote, so that pages are segmented with it
        write_ensemble_folder(tmp, models / source / "model", trees / source / "gbt",
                              {**rule_meta(setting), "heuristic": setting[1]})
        ex = load_extractor("ensemble", tmp, device="cpu")
        positions, _ = select(source, "test", None)
        for page in iter_selected(source, positions):
            doc = None if page.meta.get("error") else ex.page_segmenter(page.html)
            row: dict[str, Any] = {"id": page.id, "lang": page.lang, "gold": page.gold, "doc": doc}
            if doc is not None and doc.blocks:
                prepared = ex.prepare([doc])
                row["model"] = ex.forward(prepared)[0]
                row["gbt"] = prepared.gbt[0]
                row["vote"] = doc.extra[VOTE]
            pages.append(row)
    return pages


def load_parts(out: Path, models: Path, trees: Path, folds: tuple[str, ...] = SOURCES
               ) -> dict[str, list[dict[str, Any]]]:
    """parts/S.json.gz of every fold (of `folds`), made when missing."""
    parts = {}
    for source in folds:
        path = parts_file(out, source)
        if not path.exists():
            log(f"{source}: the fold's parts on its test pages")
            path.parent.mkdir(parents=True, exist_ok=True)
            write_cached(path, fold_parts(source, models, trees))
        parts[source] = read_cached(path)
    return parts


# ------------------------------------------------------------------------------------------- 2. scores
def page_decision(page: dict[str, Any], blend: Blend, rule: DecisionRule) -> tuple[np.ndarray, Extraction] | None:
    """A fold part's page under a blend and rule: its blended P(body) and the ensemble's Extraction (None: a page
    with no block)."""
    doc = page["doc"]
    if doc is None or not doc.blocks:
        return None
    probs = blend([page["model"]], [page["gbt"]], [page["vote"]])[0]
    return probs, rule.decide(doc, probs, "ensemble")


def page_texts(pages: list[dict[str, Any]], setting: Setting, convention: GoldConvention | None = None) -> list[str]:
    """Each page's text as scored against its source's gold (evaluate.scored_text: with the headline and byline
    where that gold holds them)."""
    blend, rule = rule_of(setting)
    return [scored_text(d[1], convention) if (d := page_decision(p, blend, rule)) is not None else ""
            for p in pages]


def test_domains(source: str) -> list[str | None]:
    """The registrable domain of each of the source's test pages (None: no host), in fold_parts's order."""
    positions, _ = select(source, "test", None)
    return [registrable(site_of(page)) for page in iter_selected(source, positions)]


def without(fold: str, other: str) -> str:
    """The grid's key of fold `fold`'s test pages less those of a site of `other` (nested choice for `other`)."""
    return f"{fold} without sites of {other}"


def blind_pages(parts: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], list[int]]:
    """For each fold f and other fold g, the indices of f's test pages that take part in choosing g's blend
    (`without`): those from a host, none of g's sites."""
    domains = {f: test_domains(f) for f in parts}
    held = {g: unseen_sites([(g, resolve_dataset(g))]) for g in parts}
    for f in parts:
        assert len(domains[f]) == len(parts[f]), f"{f}: {parts_file(Path(), f)} holds other pages than its test split"
    return {(f, g): [i for i, d in enumerate(domains[f]) if d is not None and d not in held[g].domains]
            for f in parts for g in parts if g != f}


def page_scores(pages: list[dict[str, Any]], source: str, setting: Setting,
                memo: dict[tuple[str, int, str], Any]) -> list[Any]:
    """Each of a fold's test pages scored at a setting against its source's gold; `memo` keeps a page's score per
    distinct text (most settings give most pages the same text)."""
    scores = []
    for i, (p, text) in enumerate(zip(pages, page_texts(pages, setting, gold_convention(source)), strict=True)):
        key = (source, i, text)
        if key not in memo:
            memo[key] = score_page(p["gold"], text)
        scores.append(memo[key])
    return scores


def fold_row(pages: list[dict[str, Any]], source: str, scores: list[Any]) -> dict[str, tuple[float, float] | None]:
    """A fold's (token F1, acc@0.9) from its pages' scores, and daniel's Chinese pages' (ZH) for daniel."""
    row = {source: _summary(scores)}
    if source == "daniel":
        row[ZH] = _summary([s for s, p in zip(scores, pages, strict=True) if p["lang"] == "zh"])
    return row


def grid_scores(parts: dict[str, list[dict[str, Any]]], done: dict[Setting, dict[str, tuple[float, float]]]
                ) -> dict[Setting, dict[str, tuple[float, float]]]:
    """(token F1, acc@0.9) of every setting on every fold's test pages (and daniel's Chinese ones), and on each
    fold's test pages less those of a site of each other fold (`without`); settings in `done` with every key kept; a
    page's score is computed once per distinct text."""
    memo: dict[tuple[str, int, str], Any] = {}
    kept = blind_pages(parts)
    for (f, g), idx in kept.items():
        log(f"choosing the blend of fold {g}: {len(idx)} of {f}'s {len(parts[f])} test pages")
    keys = {*parts, *(without(f, g) for f, g in kept)}
    out = {s: row for s, row in done.items() if keys <= set(row)}
    for k, setting in enumerate(s for s in settings() if s not in out):
        row = {}
        for source, pages in parts.items():
            scores = page_scores(pages, source, setting, memo)
            row.update(fold_row(pages, source, scores))
            for (f, g), idx in kept.items():
                if f == source:
                    row[without(f, g)] = _summary([scores[i] for i in idx])
        out[setting] = row
        if k % 10 == 9:
            log(f"{k + 1} of {len(settings())} settings")
    return out


def rule_key() -> dict[str, Any]:
    """What a cached setting's scores depend on beyond the setting itself: the steps that can be turned off (STEPS),
    RULE_VERSION (the rest of the decision rule) and what each source's gold holds besides the body (scored_text)."""
    return {**STEPS, "version": RULE_VERSION, "conventions": {s: gold_convention(s)._asdict() for s in SOURCES}}


def load_grid(path: Path) -> dict[Setting, dict[str, tuple[float, float]]]:
    """The cached scores of grid.json.gz: {} when there is none or its scores were made under another rule_key (a
    bare dict of settings knows no rule_key: it is scored again too)."""
    if not path.exists():
        return {}
    cached = read_cached(path)
    rule, scores = (cached["rule"], cached["scores"]) if "rule" in cached else ({}, cached)
    if rule != rule_key():
        log(f"{path}: scored under another decision rule or gold convention; its {len(scores)} settings are "
            "scored again")
        return {}
    return dict(scores)


def _summary(scores: list[Any]) -> tuple[float, float] | None:
    """(token F1, acc@0.9) of page scores; None when no page is scored (a fold all of whose test pages are of
    another fold's sites)."""
    s = summarize(scores)
    return None if s["token_f1"] is None else (float(s["token_f1"]), float(s["acc@0.90"]))


def best(grid: dict[Setting, dict[str, tuple[float, float]]], folds: tuple[str, ...], vote: bool = True,
         blind_to: str | None = None) -> Setting:
    """The setting with the best OBJECTIVE over `folds`, among those with the vote (`vote`) or those without it;
    `blind_to`: each fold scored without its pages of a site of that fold (the nested choice for it)."""
    names = [without(f, blind_to) if blind_to else f for f in folds]
    candidates = [s for s in grid if (s[1] > 0) == vote]
    tops = fold_tops(grid, candidates, names)
    return max(candidates, key=lambda s: objective(grid[s], names, tops))


def fold_tops(grid: dict[Setting, dict[str, tuple[float, float]]], candidates: list[Setting],
              names: list[str] | tuple[str, ...]) -> dict[str, float]:
    """Each fold's best token F1 plus acc@0.9 among `candidates` (a fold with no page left is out)."""
    return {f: max(sum(grid[s][f]) for s in candidates) for f in names  # type: ignore[arg-type]
            if candidates and all(grid[s][f] is not None for s in candidates)}


def objective(row: dict[str, tuple[float, float] | None], names: list[str] | tuple[str, ...],
              tops: dict[str, float]) -> tuple[float, float, float]:
    """A setting's OBJECTIVE over the folds `names` of its grid row (`tops`: fold_tops), higher better: minus its
    largest shortfall of token F1 plus acc@0.9 against a fold's best, then its mean token F1 plus acc@0.9, then its
    mean token F1 (for ties); a fold with no page left is out."""
    rows = [row[f] for f in names if row[f] is not None]
    worst = max((tops[f] - sum(row[f]) for f in tops), default=0.0)  # type: ignore[arg-type]
    if not rows:
        return (-round(worst, 6), 0.0, 0.0)
    f1, acc = float(np.mean([r[0] for r in rows])), float(np.mean([r[1] for r in rows]))
    return (-round(worst, 6), round(f1 + acc, 6), f1)


def missing_kind(grid: dict[Setting, dict[str, tuple[float, float]]]) -> str | None:
    """What the report and `--ensemble` lack in `grid`: settings with the vote or without it (None: both there)."""
    kinds = {s[1] > 0 for s in grid}
    if kinds == {True, False}:
        return None
    lack = "with the vote" if False in kinds else ("without the vote (vote=0)" if True in kinds else "of any kind")
    return f"the grid holds no setting {lack}: the report and --ensemble need both (--grid vote=0,...)"


def nested_choice(grid: dict[Setting, dict[str, tuple[float, float]]], vote: bool = True) -> dict[str, Setting]:
    """Each fold's setting: the best over the *other* folds (`best`), each scored without its pages of a site of
    the fold (`blind_to`), so no page of a source or of its sites takes part in choosing the blend it is scored
    with; daniel's Chinese pages get daniel's."""
    chosen = {f: best(grid, tuple(g for g in SOURCES if g != f), vote, blind_to=f) for f in SOURCES}
    return {**chosen, ZH: chosen["daniel"]}


def write_ensemble(folder: Path, model: Path, gbt: Path, grid: dict[Setting, dict[str, tuple[float, float]]],
                   ship: tuple[Setting, Setting] | None = None) -> None:
    """An ensemble folder of MODEL and GBT with the blend chosen over all folds (and, as `without_vote`, the best
    setting without the vote), or the two settings of `ship` (`--ship`: each must be in the grid); its metrics say
    where the blend comes from."""
    from bodyblocks.training.tune import write_ensemble_folder

    chosen, plain = ship if ship else (best(grid, SOURCES), best(grid, SOURCES, vote=False))
    for s in (chosen, plain):
        if s not in grid:
            raise ValueError(f"--ship: {s} is not a setting of the grid in {folder}'s run (score it first: --grid)")
    how = (f"the setting with {OBJECTIVE}, over the leave-one-source-out folds' test pages" if not ship else
           f"given (--ship), not the grid's best over all folds {best(grid, SOURCES)}")
    loso = {f: list(grid[chosen][f]) for f in (*SOURCES, ZH)}
    write_ensemble_folder(folder, model, gbt, {
        **rule_meta(chosen), "heuristic": chosen[1], "without_vote": rule_meta(plain),
        "metrics": {"chosen_by": f"benchmarks/loso_blend.py: {how}", "setting": list(chosen),
                    "loso_token_f1_acc90": loso,
                    "without_vote_loso_token_f1_acc90": {f: list(grid[plain][f]) for f in (*SOURCES, ZH)}}})


def ship_values(text: str) -> tuple[Setting, Setting]:
    """`--ship W,H,T,O,C;W,0,T,O,C`: the setting with the vote and the one without it (ValueError otherwise)."""
    try:
        pair = tuple(tuple(float(v) for v in part.split(",")) for part in text.split(";"))
    except ValueError:
        pair = ()
    if len(pair) != 2 or any(len(s) != len(GRID) for s in pair) or pair[1][1] != 0.0 or pair[0][1] == 0.0:
        raise ValueError(f"--ship {text}: expected W,H,T,O,C;W,0,T,O,C (the setting with the vote, then one without)")
    return pair  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------- 3. report
def peer_rows(loso: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """Each peer's (token F1, acc@0.9) per fold with its headline put back (PEER) and on its body alone
    (PEER + evaluate.BODY_ONLY), from runs/loso/S/eval-PEER.json (and daniel's zh row); a peer whose reports are
    not all there is left out."""
    from bodyblocks.evaluation.evaluate import BODY_ONLY

    out: dict[str, dict[str, tuple[float, float]]] = {}
    for peer in PEERS:
        paths = [loso / source / f"eval-{peer}.json" for source in SOURCES]
        if not all(p.is_file() for p in paths):
            continue
        for source, path in zip(SOURCES, paths, strict=True):
            summary = json.loads(path.read_text(encoding="utf-8"))["summary"]
            names = {"*": source, **({"zh": ZH} if source == "daniel" else {})}  # row language -> column
            for r in summary:
                if r["dataset"] == source and r["lang"] in names and r["extractor"] in (peer, peer + BODY_ONLY):
                    label = peer if r["extractor"] == peer else f"{peer}, body only"
                    out.setdefault(label, {})[names[r["lang"]]] = (r["token_f1"], r["acc@0.90"])
    return out


def shipped_setting() -> Setting | None:
    """The shipped ensemble's blend, as `--ensemble` recorded it in its config.json (metrics.setting); None where
    there is none (a folder written before the record, or none at all)."""
    try:
        setting = json.loads(SHIPPED.read_text(encoding="utf-8"))["metrics"]["setting"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return tuple(float(v) for v in setting) if len(setting) == len(GRID) else None  # type: ignore[return-value]


def _fmt(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.3f} / {pair[1]:.3f}"


def report(grid: dict[Setting, dict[str, tuple[float, float]]], loso: Path, args: argparse.Namespace) -> str:
    peers = peer_rows(loso)
    nested, plain = nested_choice(grid), nested_choice(grid, vote=False)
    shipped = best(grid, SOURCES)
    cols = [*SOURCES, ZH]
    ours = {f: grid[nested[f]][f] for f in cols}

    def mean(d: dict[str, tuple[float, float]]) -> tuple[float, float]:
        return (float(np.mean([d[f][0] for f in SOURCES])), float(np.mean([d[f][1] for f in SOURCES])))

    lines = [
        "# One blend for every source, chosen leave-one-source-out",
        "",
        "Written by benchmarks/loso_blend.py (its docstring says how). Token F1 / acc@0.9 on each source's test "
        "pages; the fold's model and trees were trained without that source "
        f"(models: `{args.models}`, trees: `{args.trees}`). Each fold's blend is the grid's best ({OBJECTIVE}) over "
        "the *other* folds, each less its test pages from a site of the source (by registrable domain; and those "
        "with no host), so no page of a source, nor of its sites, takes part in choosing the blend it is scored "
        "with. Mean over the six folds; daniel's Chinese pages apart (not in the mean). The grid's ranges were set "
        "after a first replay of five settings on every fold, the container step's share and inner threshold are what "
        "every fold's validation tuning chose, the core's share and the thresholds of threads of repeated posts were "
        "set after a replay of them on every fold, and the objective after seven grids scored under three: the choice "
        "within the grid is blind to each fold, the grid and the objective not wholly.",
        "",
        f"Command: `python -m benchmarks.loso_blend --models {args.models} --trees {args.trees} "
        + (f"--peers {args.peers} " if args.peers != Path("runs/loso") else "")
        + "".join(f"--grid {g} " for g in args.grid) + "".join(f"--no-{step.replace('_', '-')} "
                                                               for step, on in STEPS.items() if not on)
        + f"--out {args.out} --doc {args.doc}`",
        "",
        *([args.note, ""] if args.note else []),
        "| extractor | " + " | ".join(cols) + " | mean |",
        "|---|" + "---|" * (len(cols) + 1),
        "| ensemble, blend chosen on the other folds | " + " | ".join(_fmt(ours[f]) for f in cols)
        + f" | **{_fmt(mean(ours))}** |",
        "| the same without the vote (`--no-vote`) | " + " | ".join(_fmt(grid[plain[f]][f]) for f in cols)
        + f" | {_fmt(mean({f: grid[plain[f]][f] for f in SOURCES}))} |",
    ]
    for peer, rows in peers.items():
        if all(f in rows for f in cols):
            lines.append(f"| {peer} | " + " | ".join(_fmt(rows[f]) for f in cols) + f" | {_fmt(mean(rows))} |")
    lines += ["", "Settings (model weight, vote weight, threshold, container's outer threshold, container's core: 0 "
              f"none; the container step's share and inner threshold are {CONTAINER[0]} and {CONTAINER[1]}, the core's "
              f"share {CORE_SHARE}, the rescue {RESCUE}):", ""]
    for f in SOURCES:
        lines.append(f"- fold {f}: {nested[f]}; without the vote {plain[f]}")
    no_vote = best(grid, SOURCES, vote=False)
    lines.append(f"- chosen over all six folds (for a model trained on every source): **{shipped}**, mean "
                 f"{_fmt(mean({f: grid[shipped][f] for f in SOURCES}))}; without the vote {no_vote}, mean "
                 f"{_fmt(mean({f: grid[no_vote][f] for f in SOURCES}))}")
    tops = fold_tops(grid, [s for s in grid if s[1] > 0], SOURCES)  # the shipped choice's candidates
    ranked = sorted(grid, key=lambda s: objective(grid[s], SOURCES, tops), reverse=True)[:8]
    ship = shipped_setting()
    shown = [ship] if ship in grid and ship not in ranked else []
    lines += ["", "The grid's best settings over all folds (not LOSO figures: chosen on these pages)"
              + (", then the shipped ensemble's setting" if shown else "") + ":", "",
              "| setting | " + " | ".join(SOURCES) + " | mean |", "|---|" + "---|" * (len(SOURCES) + 1)]
    for s in ranked + shown:
        lines.append(f"| {s}{' (shipped)' if s == ship else ''} | " + " | ".join(_fmt(grid[s][f]) for f in SOURCES)
                     + f" | {_fmt(mean({f: grid[s][f] for f in SOURCES}))} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = arguments(__doc__, out="runs/loso-blend", write="docs/BLENDS.md#loso", doc_flag="--doc")
    ap.add_argument("--models", type=Path, default=Path("runs/loso"), help="fold folders holding model/")
    ap.add_argument("--trees", type=Path, default=Path("runs/loso-vocab"), help="fold folders holding gbt/")
    ap.add_argument("--peers", type=Path, default=Path("runs/loso"), help="fold folders with eval-PEER.json")
    ap.add_argument("--report-only", action="store_true", help="the doc from the cached grid scores")
    ap.add_argument("--grid", action="append", default=[], metavar="KEY=V,V",
                    help="other values for one of GRID's keys (weight=0 --grid vote=0.1,0.2,0.3,0.4: the trees and the "
                         "vote without the model)")
    ap.add_argument("--note", default="", help="a paragraph added to the doc (what the folds' parts are)")
    ap.add_argument("--parts-only", nargs="+", choices=SOURCES, metavar="FOLD",
                    help="write these folds' parts/ and stop (e.g. for benchmarks.convention_loso when not every fold "
                         "has a model)")
    ap.add_argument("--no-captions", action="store_true",
                    help="the decision rule without its caption step (captions stay in the body): an ablation; reuse "
                         "another run's parts/ by copying them into --out")
    ap.add_argument("--no-repeated-posts", action="store_true",
                    help="the decision rule without threads of repeated posts outside comment containers: an ablation")
    ap.add_argument("--no-comment-headings", action="store_true",
                    help="the decision rule without comment sections found by their heading: an ablation")
    ap.add_argument("--no-role-rescue", action="store_true",
                    help="the decision rule without the rescue after the roles (decision.py, step 11): an ablation")
    ap.add_argument("--no-sidebars", action="store_true",
                    help="the decision rule without its sidebar step (a sidebar's widgets stay in the body): an "
                         "ablation")
    ap.add_argument("--no-key-points", action="store_true",
                    help="the decision rule without its key points step (a story's key points box stays in the "
                         "body): an ablation")
    ap.add_argument("--ensemble", type=Path, help="write an ensemble folder with the blend chosen over all folds")
    ap.add_argument("--model", type=Path, help="--ensemble: its model checkpoint")
    ap.add_argument("--gbt", type=Path, help="--ensemble: its trees checkpoint")
    ap.add_argument("--ship", metavar="W,H,T,O,C;W,0,T,O,C",
                    help="--ensemble: these two settings (with the vote; without it) instead of the grid's best")
    args = ap.parse_args()
    if args.ensemble and not (args.model and args.gbt):
        ap.error("--ensemble needs --model and --gbt")
    STEPS.update({step: not getattr(args, f"no_{step}") for step in STEPS})
    if args.ensemble and not all(STEPS.values()):
        ap.error("--ensemble writes the shipped rule: not with " + ", ".join(f"--no-{s.replace('_', '-')}"
                                                                               for s in STEPS))
    try:
        ship = ship_values(args.ship) if args.ship else None
    except ValueError as e:
        ap.error(str(e))
    try:
        GRID.update(grid_values(args.grid))
    except ValueError as e:
        ap.error(str(e))
    if args.parts_only:
        load_parts(args.out, args.models, args.trees, tuple(args.parts_only))
        return 0
    grid_path = args.out / f"grid{SUFFIX}"
    grid = done = load_grid(grid_path)
    if not args.report_only:
        grid = grid_scores(load_parts(args.out, args.models, args.trees), done)
        write_cached(grid_path, {"rule": rule_key(), "scores": grid})
    lack = missing_kind(grid)
    if lack:
        ap.error(f"{lack}; the scores so far are in {grid_path}")
    if args.ensemble:
        try:
            write_ensemble(args.ensemble, args.model, args.gbt, grid, ship)
        except ValueError as e:
            ap.error(str(e))
    text = report(grid, args.peers, args)
    print(text)
    write_report(args.doc, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
