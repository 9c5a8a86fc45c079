"""Re-choose the decision rule's constants and cue lists on the pages that choose (train and validation), report once.

    python -m benchmarks.rechoose --out runs/rechoose                  # search: writes runs/rechoose/chosen.json
    python -m benchmarks.rechoose --out runs/rechoose --report --write docs/EVALUATION.md#rechosen

The protocol (docs/GENERALIZATION.md): the six full-gold sources' train and validation pages (data/splits/<source>/
{train,val}.txt) choose; their test pages only report, once, after the choice is written down (`--report`).

The pages (benchmarks/rechoose_parts.py): every page segmented, with the shipped default's P(body) per block (the
shipped ensemble's blend), computed once and cached under OUT/parts. Only the decision rule (DecisionRule.decide)
is re-run; each page's text is scored as evaluation scores it (evaluate.scored_text under its source's gold
convention; bodyblocks.metrics: token F1, and the Levenshtein ratio with white space removed for acc@0.9).

The objective, fixed before any result was read:
  maximize the mean over the six sources of the mean per-page token F1 on their train+val pages;
  coordinate search, one pass, in the order of rechoose_space.knobs (the shipped config's rule settings, then the
  shares and probabilities of decision.py, roles.py and kinds.py, then their character counts and windows, then the
  rapidfuzz ratios): each constant's grid (rechoose_space.knobs: ±0.05 and ±0.1 for a probability or share, the
  step off where it has one; ×0.5, ×0.75, ×1.5, ×2 for a count; ±5 and ±10 for a ratio) is scored with the values
  chosen so far, and a value replaces the current one only when it beats it by more than NOISE (0.001 mean token
  F1); ties, and gains within the noise, keep today's value. acc@0.9 is reported, never used to choose.
  The search scores a fixed sample of the train+val pages (SAMPLE_EVERY: every third page of a source with more
  than SMALL of them, every page of the others: ~1,250 pages; the replay of all ~3,400 costs a minute on 2 busy
  cores); each change it keeps is then confirmed on all train+val pages, leave one out: a change whose removal
  from the chosen set costs the objective no more than NOISE there goes back to today's value.
  Cue lists (role_cues.py), after the constants: each cue's pages are those where it fires (matches what the rule
  tests, at the chosen values); a cue whose removal raises the objective by more than NOISE (it hurts there) is
  dropped; one that fires on no train+val page stays (its removal is a tie, and a tie keeps today's cue). Each list
  turned off whole is reported, not applied.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import arguments, write_report
from benchmarks.rechoose_cues import CueRecorder, cue_values, restore_values
from benchmarks.rechoose_parts import CHOOSING, REPORTING, SOURCES, source_parts
from benchmarks.rechoose_space import OFF, Knob, current, knobs, patched, rule_with
from bodyblocks.evaluation.evaluate import scored_text
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.loading.checkpoints import shipped
from bodyblocks.metrics import accuracy, score_page
from bodyblocks.training.datasets import gold_convention

NOISE = 0.001  # mean token F1: a change smaller than this keeps today's value
SAMPLE_EVERY, SMALL = 3, 150  # the search's sample: every third page of a source with more than SMALL pages
WORKERS = 2
CHANGED = "pages whose score changes"  # the report's row of pages the re-chosen rule scores otherwise
Pages = dict[str, list[dict[str, Any]]]
Scores = dict[str, list[tuple[float, float] | None]]  # per source, per page: (token F1, ratio); None: no gold


def shipped_rule() -> DecisionRule:
    folder = shipped("ensemble")
    assert folder is not None, "the shipped ensemble is missing"
    return DecisionRule.from_meta(json.loads((folder / "config.json").read_text(encoding="utf-8")))


class Replay:
    """The decision rule re-run on cached pages, each page's score memoized by its text."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.conventions = {s: gold_convention(s) for s in pages}
        self.memo: dict[tuple[str, int, str], tuple[float, float] | None] = {}

    def page(self, source: str, i: int, rule: DecisionRule) -> tuple[float, float] | None:
        p = self.pages[source][i]
        doc, probs = p["doc"], p["probs"]
        text = "" if doc is None or probs is None else scored_text(rule.decide(doc, probs, "ensemble"),
                                                                   self.conventions[source])
        key = (source, i, text)
        if key not in self.memo:
            s = score_page(p["gold"], text)
            self.memo[key] = (float(s.token_f1), float(s.ratio)) if s.has_gold else None
        return self.memo[key]

    def scores(self, rule: DecisionRule, values: dict[str, Any], only: dict[str, list[int]] | None = None,
               base: Scores | None = None) -> Scores:
        """Every page's score under `rule` and the module constants `values`; with `only` (per source, the pages
        that can change) the others are taken from `base`."""
        out: Scores = {}
        with patched(values):
            for source, pages in self.pages.items():
                if only is None or base is None:
                    out[source] = [self.page(source, i, rule) for i in range(len(pages))]
                else:
                    got = list(base[source])
                    for i in only.get(source, []):
                        got[i] = self.page(source, i, rule)
                    out[source] = got
        return out


def summary(scores: Scores) -> dict[str, tuple[float, float]]:
    """(mean token F1, acc@0.9) per source."""
    out = {}
    for source, rows in scores.items():
        have = [r for r in rows if r is not None]
        out[source] = (float(np.mean([f for f, _ in have])) if have else 0.0, accuracy([r for _, r in have], 0.9))
    return out


def objective(scores: Scores) -> float:
    """The mean over sources of the mean per-page token F1."""
    return float(np.mean([f for f, _ in summary(scores).values()]))


def sample(pages: Pages) -> Pages:
    """The search's pages: every SAMPLE_EVERY-th page of a source with more than SMALL, all of the others."""
    return {s: rows if len(rows) <= SMALL else rows[::SAMPLE_EVERY] for s, rows in pages.items()}


_REPLAY: Replay | None = None  # a worker's replay (forked with the pages)


def _scores(task: tuple[Any, ...]) -> Scores:
    """A worker's scores of (rule, values[, only, base]) on its pages."""
    assert _REPLAY is not None
    return _REPLAY.scores(*task)


def _candidate(rule: DecisionRule, values: dict[str, Any], knob: str, value: Any
               ) -> tuple[DecisionRule, dict[str, Any]]:
    if knob.startswith("rule."):
        return rule_with(rule, knob, value), values
    return rule, {**values, knob: value}


def coordinate_search(pool: Any, rule: DecisionRule, grid: Sequence[Knob], log: Callable[[str], None]
                      ) -> tuple[DecisionRule, dict[str, Any], list[dict[str, Any]]]:
    """One pass over `grid` on the workers' pages: each knob's values scored with the choices so far; the best kept
    where it beats the current value by more than NOISE. Returns the rule, the module constants changed and a row
    per knob."""
    values: dict[str, Any] = {}
    base = pool.map(_scores, [(rule, values)])[0]
    rows = []
    for knob in grid:
        today = values.get(knob.name, current(knob.name, rule))
        got = pool.map(_scores, [_candidate(rule, values, knob.name, v) for v in knob.grid])
        objs = [objective(g) for g in got]
        now = objective(base)
        tried = {"today": [now, summary(base)], **{str(v): [o, summary(g)] for v, o, g in zip(knob.grid, objs, got,
                                                                                            strict=True)}}
        best = int(np.argmax(objs)) if objs else -1
        gain = objs[best] - now if objs else 0.0
        chosen = knob.grid[best] if gain > NOISE else today
        log(f"{knob.name}: today {today} {now:.4f}; " + ", ".join(f"{v}: {o:+.4f}" for v, o in
                                                                  zip(knob.grid, [o - now for o in objs], strict=True))
            + f" -> {chosen}")
        rows.append({"knob": knob.name, "today": today, "chosen": chosen, "gain": gain if chosen != today else 0.0,
                     "tried": tried})
        if chosen != today:
            rule, values = _candidate(rule, values, knob.name, chosen)
            base = got[best]
    return rule, values, rows


def confirm(replay: Replay, today: DecisionRule, rule: DecisionRule, values: dict[str, Any],
            rows: list[dict[str, Any]], log: Callable[[str], None]) -> tuple[DecisionRule, dict[str, Any]]:
    """The search's changes on all train+val pages, leave one out: each kept only where taking it back (to today's
    value) costs the objective more than NOISE; returns the rule and constants confirmed."""
    changed = [r for r in rows if r["chosen"] != r["today"]]
    full = objective(replay.scores(rule, values))
    for row in changed:
        back_rule, back_values = rule, values
        if row["knob"].startswith("rule.container") and today.container is not None:
            box = list(rule.container or today.container)  # a step turned off comes back with today's values
            box += list(today.container[len(box):])
            back_rule = dataclasses.replace(rule, container=tuple(box))
        back_rule, back_values = _candidate(back_rule, back_values, row["knob"], row["today"])
        without = objective(replay.scores(back_rule, back_values))
        row["gain_all"] = full - without
        if full - without <= NOISE:
            row["chosen"], row["gain"] = row["today"], 0.0
            rule, values, full = back_rule, back_values, without
        log(f"confirm {row['knob']}: all train+val {row['gain_all']:+.4f} -> {row['chosen']}")
    values = {k: v for k, v in values.items() if v != current(k, today)}
    return rule, values


def choose(out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """The search on the train+val pages; writes OUT/chosen.json."""
    global _REPLAY
    import multiprocessing

    pages = {s: source_parts(s, CHOOSING, out) for s in SOURCES}
    log("pages: " + ", ".join(f"{s} {len(p)}" for s, p in pages.items()))
    replay = Replay(pages)
    _REPLAY = Replay(sample(pages))
    today = shipped_rule()
    with multiprocessing.get_context("fork").Pool(WORKERS) as pool:
        rule, values, rows = coordinate_search(pool, today, knobs(today), log)
        rule, values = confirm(replay, today, rule, values, rows, log)
        base = replay.scores(rule, values)
        cues = CueRecorder(replay, _REPLAY, pool, _scores, rule, values, objective, NOISE, log).run()
    chosen = {"rule_today": _rule_dict(today), "rule": _rule_dict(rule), "constants": values,
              "constants_today": {k: current(k, today) for k in values}, "knobs": rows, "cues": cues,
              "objective_today": objective(replay.scores(today, {})), "objective_constants": objective(base)}
    (out / "chosen.json").write_text(json.dumps(chosen, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    return chosen


def _rule_dict(rule: DecisionRule) -> dict[str, Any]:
    return {"threshold": rule.threshold, "rescue": rule.rescue, "confident": rule.confident,
            "container": list(rule.container) if rule.container is not None else None}


def _rule_of(d: dict[str, Any]) -> DecisionRule:
    box = d["container"]
    return DecisionRule(d["threshold"], d["confident"], d["rescue"], tuple(box) if box is not None else None)


def states(chosen: dict[str, Any]) -> Iterator[tuple[str, DecisionRule, dict[str, Any]]]:
    """("today", ...) and ("re-chosen", ...): each the rule and the module constants and cue lists, both patched
    explicitly, so that the figures do not depend on which of the two the code holds now."""
    yield "today", _rule_of(chosen["rule_today"]), {**chosen["constants_today"], **restore_values(chosen["cues"])}
    yield "re-chosen", _rule_of(chosen["rule"]), {**chosen["constants"], **cue_values(chosen["cues"])}


def report(out: Path, chosen: dict[str, Any], splits: tuple[str, ...]) -> dict[str, dict[str, tuple[float, float]]]:
    """Token F1 / acc@0.9 per source (and daniel's Chinese pages) on `splits`, today's rule and the re-chosen one."""
    replay = Replay({s: source_parts(s, splits, out) for s in SOURCES})
    rows, each = {}, []
    for name, rule, values in states(chosen):
        scores = replay.scores(rule, values)
        got = summary(scores)
        zh = [r for r, p in zip(scores["daniel"], replay.pages["daniel"], strict=True) if p["lang"] == "zh" and r]
        got["daniel zh"] = (float(np.mean([f for f, _ in zh])) if zh else 0.0, accuracy([r for _, r in zh], 0.9))
        rows[name] = got
        each.append(scores)
    # per source: the pages whose score the re-chosen rule changes, of the pages
    is_zh = [p["lang"] == "zh" for p in replay.pages["daniel"]]
    moved = {s: [a != b for a, b in zip(each[0][s], each[1][s], strict=True)] for s in SOURCES}
    rows[CHANGED] = {**{s: (float(sum(m)), float(len(m))) for s, m in moved.items()},
                     "daniel zh": (float(sum(m for m, z in zip(moved["daniel"], is_zh, strict=True) if z)),
                                   float(sum(is_zh)))}
    return rows


def markdown(chosen: dict[str, Any], tables: dict[str, dict[str, dict[str, tuple[float, float]]]]) -> str:
    """The report: per split set, today's rule and the re-chosen one; the changes; the cue lists."""
    cols = [*SOURCES, "daniel zh"]
    lines = ["Written by benchmarks/rechoose.py (its docstring holds the objective, written before the search). "
             "Token F1 / acc@0.9, the shipped default's P(body) under today's decision rule and under the one "
             "re-chosen on the train and validation pages; the test pages read once, after the choice; daniel's "
             "Chinese pages apart (not in the mean).", "",
             "Command: `python -m benchmarks.rechoose --out runs/rechoose --report "
             "--write docs/EVALUATION.md#rechosen`", "",
             "| pages | rule | " + " | ".join(cols) + " | mean |", "|---|---|" + "---|" * (len(cols) + 1)]
    for pages, rows in tables.items():
        for name, got in rows.items():
            if name == CHANGED:
                lines.append(f"| {pages} | {name} | " + " | ".join(f"{got[c][0]:.0f} of {got[c][1]:.0f}" for c in cols)
                             + f" | {sum(got[s][0] for s in SOURCES):.0f} of {sum(got[s][1] for s in SOURCES):.0f} |")
                continue
            mean = [float(np.mean([got[s][k] for s in SOURCES])) for k in (0, 1)]
            lines.append(f"| {pages} | {name} | " + " | ".join(f"{got[c][0]:.3f} / {got[c][1]:.3f}" for c in cols)
                         + f" | **{mean[0]:.3f} / {mean[1]:.3f}** |")
    lines += ["", "Changed (gain in the objective on the search's sample; on all train+val pages, leave one out):", ""]
    changed = [r for r in chosen["knobs"] if r["chosen"] != r["today"]]
    for row in changed:
        shown = "off" if row["chosen"] == OFF else row["chosen"]
        lines.append(f"- `{row['knob']}` {row['today']} → {shown} (+{row['gain']:.4f}; "
                     f"+{row.get('gain_all', 0.0):.4f})")
    for row in chosen["knobs"]:  # the search's choices that all train+val pages did not confirm
        if row["chosen"] == row["today"] and "gain_all" in row:
            tried = {k: v[0] for k, v in row["tried"].items() if k != "today"}
            best = max(tried, key=tried.__getitem__)
            lines.append(f"- not confirmed, today's value kept: `{row['knob']}` {row['today']} → {best} "
                         f"(+{tried[best] - row['tried']['today'][0]:.4f} on the sample; "
                         f"+{row['gain_all']:.4f} on all train+val)")
    if not changed:
        lines.append("- no constant changed: none gains more than the noise on all train+val pages")
    lines += ["", "Cue lists: cues, those that fire on train+val pages (pages), those that fire on none (kept: a tie "
              "keeps today's cue), those dropped (hurting), and the objective's change on the sample with the whole "
              "list off (not applied):", "",
              "| list | cues | firing (pages) | firing on none | dropped | list off |", "|---|---|---|---|---|---|"]
    for lst in chosen["cues"]["lists"]:
        mine = [c for c in chosen["cues"]["cues"] if c["list"] == lst["list"]]
        firing = [c for c in mine if c["pages"]]
        hurt = [c for c in mine if c["dropped"] and c["pages"]]
        never = sum(1 for c in mine if not c["pages"])
        lines.append(f"| {lst['list']} | {len(mine)} | {len(firing)} ({lst['pages']}) | {never} | {len(hurt)} | "
                     f"{lst['gain_off']:+.4f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = arguments(__doc__, out="runs/rechoose", write=True)
    ap.add_argument("--report", action="store_true", help="report OUT/chosen.json on the test pages (once)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if not args.report:
        chosen = choose(args.out, log)
        print(markdown(chosen, {"train+val": report(args.out, chosen, CHOOSING)}))
        return 0
    chosen = json.loads((args.out / "chosen.json").read_text(encoding="utf-8"))
    tables = {"train+val": report(args.out, chosen, CHOOSING), "test": report(args.out, chosen, REPORTING)}
    text = markdown(chosen, tables)
    print(text)
    write_report(args.write, text, tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
