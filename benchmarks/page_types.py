"""Word F1 per wcxb-dev page type of the shipped default and of trafilatura, and the news sources' token F1.

    python -m benchmarks.page_types --split train,val                       # for choosing: never the test pages
    python -m benchmarks.page_types --split test --news-split '' --write docs/EVALUATION.md#page-types

1. wcxb-dev's pages of the project's splits named (data/splits/wcxb-dev), each scored by WCXB's own scorer logic
   (its evaluate.py: word_f1): the lower-cased word tokens (bodyblocks.metrics.tokens: a run of word characters,
   as WCXB's `\\w+` on these English pages) of the extraction against the gold's, as bags: precision, recall, F1;
   a page whose gold has no word scores 1.0 when the extraction has none either, else 0.0 (WCXB counts them);
2. the extraction of the shipped default as a user runs it (bodyblocks.load(): the ensemble on a CPU), its text as
   evaluation.evaluate.scored_text gives it under wcxb-dev's gold convention (the standfirst put back, as body),
   and trafilatura's (baselines.peers.TrafilaturaExtractor: its body, tables in); the mean per page type and
   over all pages;
3. the news sources' pages of `--news-split` (their data/splits/<source>/ lists), the shipped default's mean token
   F1 (bodyblocks.metrics.score_page, under each source's gold convention), to check that a rule change does not
   cost the news pages; `--off STEP` (a switch of benchmarks/rule_steps.AblatedRule) scores the rule with that
   step off beside it (the ablation).

The default's blended P(body) of every page, with its segmented page, is kept under --cache (gzipped JSON,
benchmarks/cache_files.py; per checkpoint) and the decision rule is run again on them each time: a change of the
rule is measured in seconds, on the same probabilities as the extractor gives. trafilatura's text is kept there
too (JSON per page).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cache_files import read_cached, write_cached
from benchmarks.common import arguments, need_root, write_report
from benchmarks.rule_steps import STEPS, ablated
from bodyblocks.errors import InputError
from bodyblocks.evaluation.evaluate import scored_text
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.metrics import score_page, tokens
from bodyblocks.training.datasets import GOLD_CONVENTIONS, GoldConvention, read_dataset
from bodyblocks.training.splits import split_of
from bodyblocks.types import Document, Page

DATASET = "wcxb-dev"
NEWS = ("cleaneval-en", "cleanportaleval", "daniel", "dragnet", "l3s-gn1")  # the sources of news pages
TYPES = ("article", "forum", "product", "collection", "listing", "documentation", "service")
PEER = "trafilatura"


def word_f1(gold: str, pred: str) -> float:
    """WCXB's word F1 of one page: bags of lower-cased word tokens; an empty gold scores 1.0 against an empty
    extraction, else 0.0."""
    g, p = tokens(gold), tokens(pred)
    if not g:
        return 0.0 if p else 1.0
    return score_page(gold, pred).token_f1 if p else 0.0


@dataclass
class Cached:
    """One page as the default scored it: its segmented page and blended P(body) (the rule runs on these)."""

    doc: Document
    probs: np.ndarray


def selected(root: Path, dataset: str, splits: Sequence[str]) -> Iterator[Page]:
    """The readable pages of `dataset` in the project's `splits`, in the dataset's order."""
    where = split_of(root / dataset)
    for page in read_dataset(root / dataset):
        if where.get(page.id) in splits and not page.meta.get("error"):
            yield page


class Runs:
    """The default's probabilities and trafilatura's text per page, made once and kept under `cache`."""

    def __init__(self, cache: Path, checkpoint: str | None = None) -> None:
        self.cache = cache
        self.checkpoint = checkpoint  # an ensemble folder in place of the shipped default (None: the default)
        self._extractor: Any = None
        self._peer: Any = None
        self._key = ""

    @property
    def extractor(self) -> Any:
        if self._extractor is None:
            import bodyblocks
            from bodyblocks.loading.checkpoints import resolve, shipped
            from bodyblocks.loading.provenance import model_hash

            self._extractor = bodyblocks.load(self.checkpoint)
            # the probabilities are the checkpoint's: kept under its weights' hash
            folder = resolve(self.checkpoint) if self.checkpoint else shipped(self._extractor.name)
            self._key = model_hash(folder)[:12] if folder is not None else "unknown"
        return self._extractor

    def ours(self, dataset: str, page: Page) -> Cached | None:
        """The default's segmented page and blended P(body) (None: a page it refuses, with one line)."""
        path = self.cache / f"ours-{self.extractor.name}-{self._key}" / dataset / f"{page.id}.json.gz"
        if path.is_file():
            doc, probs = read_cached(path)
            return Cached(doc, np.asarray(probs, np.float32))
        from bodyblocks.classify.pagekind import with_url
        from bodyblocks.page.decode import page_source

        ex = self.extractor
        try:
            doc = with_url(ex.page_segmenter(page_source(page.html)), page.url)
        except InputError as exc:
            print(f"{dataset}/{page.id}: {exc}", file=sys.stderr)
            return None
        prepared = ex.prepare([doc])
        probs = ex.combine(prepared, ex.forward(prepared))[0]  # what extract's decision rule is given
        out = Cached(doc, np.asarray(probs, np.float32))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cached(path, (out.doc, out.probs))
        return out

    def peer(self, dataset: str, page: Page) -> str:
        """trafilatura's text of the page ("" where it fails)."""
        path = self.cache / PEER / dataset / f"{page.id}.json"
        if path.is_file():
            return str(json.loads(path.read_text(encoding="utf-8"))["text"])
        from bodyblocks.baselines.peers import TrafilaturaExtractor

        if self._peer is None:
            self._peer = TrafilaturaExtractor(comments=False)
        try:
            text = scored_text(self._peer.extract(page.html, page.url), GOLD_CONVENTIONS.get(dataset))
        except InputError as exc:
            print(f"{dataset}/{page.id}: {PEER}: {exc}", file=sys.stderr)
            text = ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"text": text}), encoding="utf-8")
        return text


def decided_text(rule: DecisionRule, cached: Cached, convention: GoldConvention | None) -> str:
    """The text the rule gives the page, as scored (the extractor's own decision on the same P(body))."""
    return scored_text(rule.decide(cached.doc, cached.probs, "ensemble"), convention)


def type_table(root: Path, runs: Runs, splits: Sequence[str], rules: dict[str, DecisionRule], peer: bool = True
               ) -> dict[str, dict[str, list[float]]]:
    """{column: {page type: per-page word F1}} on wcxb-dev's pages of `splits`: a column per rule, and PEER."""
    out: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in [*rules, *([PEER] if peer else [])]}
    convention = GOLD_CONVENTIONS.get(DATASET)
    for page in selected(root, DATASET, splits):
        kind = str(page.meta.get("page_type") or "")
        gold = page.gold or ""
        cached = runs.ours(DATASET, page)
        for name, rule in rules.items():
            out[name][kind].append(word_f1(gold, decided_text(rule, cached, convention)) if cached else 0.0)
        if peer:
            out[PEER][kind].append(word_f1(gold, runs.peer(DATASET, page)))
    return out


def news_means(root: Path, runs: Runs, split: str, rules: dict[str, DecisionRule]) -> dict[str, dict[str, float]]:
    """{rule: {source: mean token F1}} of the default on the news sources' pages of `split` with a gold text."""
    out: dict[str, dict[str, float]] = {name: {} for name in rules}
    for source in NEWS:
        if not (root / source).is_dir():
            continue
        convention = GOLD_CONVENTIONS.get(source)
        scores: dict[str, list[float]] = defaultdict(list)
        for page in selected(root, source, [split]):
            if not (page.gold or "").strip():
                continue
            cached = runs.ours(source, page)
            for name, rule in rules.items():
                text = decided_text(rule, cached, convention) if cached else ""
                scores[name].append(score_page(page.gold, text).token_f1)
        for name in rules:
            out[name][source] = float(np.mean(scores[name])) if scores[name] else float("nan")
    return out


def mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def report(table: dict[str, dict[str, list[float]]], news: dict[str, dict[str, float]], splits: Sequence[str],
           news_split: str, command: str) -> str:
    """The Markdown tables: word F1 per page type and overall, then the news sources' token F1."""
    columns = list(table)
    lines = [f"# Word F1 per page type (wcxb-dev {'+'.join(splits)})", "",
             "| page type | pages | " + " | ".join(columns) + " |", "|---|---:|" + "---:|" * len(columns)]
    first = table[columns[0]]
    for kind in [*TYPES, *sorted(set(first) - set(TYPES))]:
        if first.get(kind):
            lines.append(f"| {kind} | {len(first[kind])} | "
                         + " | ".join(f"{mean(table[c][kind]):.4f}" for c in columns) + " |")
    every = {c: [f for scores in table[c].values() for f in scores] for c in columns}
    lines.append(f"| **all** | {len(every[columns[0]])} | " + " | ".join(f"**{mean(every[c]):.4f}**" for c in columns)
                 + " |")
    if news:
        names = list(news)
        sources = list(next(iter(news.values())))
        lines += ["", f"News sources' {news_split} pages, token F1 of the default:", "",
                  "| source | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        lines += [f"| {s} | " + " | ".join(f"{news[n][s]:.4f}" for n in names) + " |" for s in sources]
    lines += ["", "Made by:", "", "```bash", command, "```"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = arguments(__doc__, root=True, write=True)
    ap.add_argument("--split", default="train,val", help="wcxb-dev's splits, comma-separated (default train,val)")
    ap.add_argument("--news-split", default="val", help="the news sources' split (default val; '' none)")
    ap.add_argument("--off", action="append", default=[], choices=STEPS, metavar="STEP",
                    help=f"also score the rule with this step off (one of {', '.join(STEPS)}); repeatable")
    ap.add_argument("--no-peer", action="store_true", help="leave trafilatura out")
    ap.add_argument("--checkpoint", metavar="DIR",
                    help="an ensemble folder (bodyblocks build's output) scored in place of the shipped default")
    ap.add_argument("--cache", type=Path, default=Path("runs/page-types"), help="the kept runs (default %(default)s)")
    args = ap.parse_args(argv)
    root = need_root(args.root, "page_types")
    splits = [s for s in args.split.split(",") if s]
    runs = Runs(args.cache, args.checkpoint)
    shipped = runs.extractor.rule
    rules: dict[str, DecisionRule] = {"bodyblocks": shipped}
    for step in args.off:
        rules[f"{step} off"] = ablated(shipped, **{step: False})
    start = time.perf_counter()
    table = type_table(root, runs, splits, rules, peer=not args.no_peer)
    news = news_means(root, runs, args.news_split, rules) if args.news_split else {}
    command = "python -m benchmarks.page_types " + shlex.join(sys.argv[1:] if argv is None else argv)
    markdown = report(table, news, splits, args.news_split, command.strip())
    print(markdown)
    print(f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    data = {"table": {c: dict(v) for c, v in table.items()}, "news": news, "splits": splits}
    write_report(args.write, markdown, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
