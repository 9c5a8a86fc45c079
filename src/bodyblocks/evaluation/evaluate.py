"""Extractors x datasets -> per-page scores, summary tables, JSON, a per-page CSV and an accuracy plot.

Stages of `evaluate`:
  1. select each dataset's pages (split, then --limit evenly spread over the selection);
  2. run every extractor on every page in worker processes, each page under a time limit (a worker that
     overruns is killed and replaced), and score it there (metrics.score_page);
  3. a page that fails (unreadable file, input error, peer error, crash, timeout) is recorded with its
     reason and scored as an empty extraction, so an extractor cannot gain by failing;
  4. aggregate per extractor x dataset, per language, and over all datasets (metrics.summarize).
Outputs (`write_outputs`): report.json, pages.csv, accuracy.png, report.md; `format_table` for the console.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bodyblocks.errors import InputError
from bodyblocks.loading.registry import TORCH, Extractor, get_extractor
from bodyblocks.metrics import THRESHOLDS, PageScore, score_page, summarize
from bodyblocks.runtime.cores import default_threads
from bodyblocks.runtime.pool import WorkerPool, WorkerStartError
from bodyblocks.training.datasets import (
    GoldConvention,
    gold_convention,
    page_from_record,
    read_dataset,
    read_records,
    resolve_dataset,
)
from bodyblocks.training.splits import SOURCE_SPLITS, load_split_ids
from bodyblocks.types import Extraction, Page
from bodyblocks.version import __version__

ALL = "*"  # the group key of "every dataset" / "every language"
DEFAULT_TIMEOUT_S = 60.0
HEADLINE_MODES = ("with", "without", "both")
BODY_ONLY = ":body"  # EvalConfig.headline "both": the suffix of an extractor's rows without its headline
STARTUP_TIMEOUT_S = 600.0  # building an extractor (loading a model) in a worker
Factory = Callable[[str, dict[str, Any]], Extractor]


def default_factory(name: str, opts: dict[str, Any]) -> Extractor:
    """get_extractor with that extractor's options."""
    return get_extractor(name, **opts)


@dataclass
class EvalConfig:
    """What to evaluate and how."""

    datasets: list[str]  # dataset folders (or names under the shared datasets root)
    extractors: list[str]  # extractor names (loading/registry.py)
    split: str | None = None  # "train" / "validation" / "test" / a source's own split name; None = all
    limit: int | None = None  # at most this many pages per dataset, evenly spread over the selection
    workers: int = 1  # extraction processes; 0 runs in this process without time limits
    timeout_s: float = DEFAULT_TIMEOUT_S  # per page and extractor
    extractor_opts: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"model": {...}}
    # each tool's headline and byline put back where the gold holds them (scored_text): "with", "without" (the body
    # alone, body_only) or "both" (each extraction scored both ways, the second as extractor NAME + BODY_ONLY)
    headline: str = "with"

    def __post_init__(self) -> None:
        if self.headline not in HEADLINE_MODES:
            raise ValueError(f"headline must be one of {', '.join(HEADLINE_MODES)}, got {self.headline!r}")


@dataclass
class PageResult:
    """One extractor on one page."""

    extractor: str
    dataset: str
    page_id: str
    lang: str | None
    score: PageScore
    status: str = "ok"  # "ok" or "failed"
    reason: str = ""  # failure tag: InputError.reason, "crash", "timeout", "worker-died", "unreadable"
    message: str = ""
    seconds: float = 0.0
    gold_chars: int = 0
    pred_chars: int = 0
    no_body: bool = False


# ------------------------------------------------------------------------------------ 1. page selection
def split_ids(dataset_dir: Path, split: str) -> tuple[set[str] | None, str]:
    """Ids of a split from the project's split files, or None (with the reason) to use the source field."""
    try:
        return set(load_split_ids(dataset_dir, split)), "project split files (data/splits)"
    except (FileNotFoundError, KeyError, ValueError) as exc:
        return None, f"no split files ({exc}): used the source's own split field"


def spread(n: int, limit: int | None) -> list[int]:
    """`limit` indices evenly spread over range(n) (all of them when limit is None or >= n)."""
    if limit is None or limit >= n:
        return list(range(n))
    if limit <= 0:
        return []
    return sorted({int(i * n / limit) for i in range(limit)})


def select(dataset: str, split: str | None, limit: int | None) -> tuple[list[int], dict[str, Any]]:
    """Positions (in read order) of the pages to evaluate, and a note on how they were chosen."""
    folder = resolve_dataset(dataset)
    light = list(read_dataset(folder, with_html=False))
    note: dict[str, Any] = {"path": str(folder), "pages_in_dataset": len(light), "split": split}
    chosen = list(range(len(light)))
    if split is not None:
        ids, how = split_ids(folder, split)
        note["split_source"] = how
        chosen = [i for i in chosen if (light[i].id in ids if ids is not None else _in_source_split(light[i], split))]
    picked = [chosen[i] for i in spread(len(chosen), limit)]
    note.update(pages_in_split=len(chosen), pages=len(picked))
    return picked, note


def _in_source_split(page: Page, split: str) -> bool:
    """Whether the source's own split name is `split` or maps to it (CleanEval "final" -> "test")."""
    own = (page.split or "").lower()
    return own == split or SOURCE_SPLITS.get(own) == split


def iter_selected(dataset: str, positions: list[int]) -> Iterator[Page]:
    """The selected pages with their bytes, streamed (a dataset is never held in memory whole)."""
    folder = resolve_dataset(dataset)
    if (folder / "pages.jsonl").is_file():  # the shared layout: read only the selected pages' files
        records = read_records(folder)
        for i in positions:
            yield page_from_record(folder, records[i])
        return
    wanted = set(positions)
    for i, page in enumerate(read_dataset(folder)):
        if i in wanted:
            yield page


# ---------------------------------------------------------------------------------- 2. run and score
# html, url, gold, snippets[, what the gold holds besides the body (training.datasets.GoldConvention)[, the
# convention of a second score of the same extraction (EvalConfig.headline "both")]]
Payload = tuple[Any, ...]


def scored_text(ex: Extraction, convention: GoldConvention | None = None) -> str:
    """The text scored against a page's gold: the body, after the extractor's own headline, standfirst and byline
    (in that order) where the gold holds them (`convention`), so that the convention moves no figure.

    A block extractor (Extraction.blocks or .headline set) took them out of its body: its headline block
    (Extraction.headline, whose text is its title), .standfirst and .byline are put back, and its captions
    (Extraction.caption_blocks) where they stand among the kept blocks, nothing else. Any other
    tool (the peers, the heuristic) reports a title, and perhaps an author, beside its body: the title is put first
    unless the body opens with it (its first OPENING_LINES lines hold it), the author after it unless the body holds
    it already. Where the gold holds readers' comments, every tool's Extraction.comments (ours; trafilatura's own)
    follow the body, each unless a line of the body is that comment already. Where it holds an error page's message,
    a tool that flags the page (Extraction.error_page: ours) has its Extraction.error_text scored as its body (the
    peers keep the message in their text)."""
    convention = convention or GoldConvention()
    if convention.errors and ex.error_page and ex.error_text and not ex.text:
        ex = replace(ex, text=ex.error_text)
    if ex.blocks is not None or ex.headline is not None:
        lines = [ex.title] if convention.title and ex.headline is not None and ex.title else []
        if convention.standfirst and ex.standfirst:
            lines.append(ex.standfirst)
        if convention.byline and ex.byline:
            lines.append(ex.byline)
        if convention.captions and ex.caption_blocks and ex.blocks is not None and ex.kept is not None:
            ex = replace(ex, text="\n".join(ex.blocks[i].text for i in sorted({*ex.kept, *ex.caption_blocks})))
    else:
        opening = _squeeze("".join(ex.text.splitlines()[:OPENING_LINES]))
        lines = [ex.title] if convention.title and ex.title and _squeeze(ex.title) not in opening else []
        if convention.byline and ex.author and _squeeze(ex.author) not in _squeeze(ex.text):
            lines.append(ex.author)
    if convention.comments and ex.comments:
        body = {_squeeze(line) for line in ex.text.splitlines()}
        ex = replace(ex, text="\n".join([ex.text, *(c for c in ex.comments if _squeeze(c) not in body)]).strip("\n"))
    return "\n".join([*lines, ex.text]) if lines and ex.text else "\n".join(lines) or ex.text


OPENING_LINES = 3  # scored_text: a tool's body that holds its title in these first lines opens with it


def _squeeze(text: str) -> str:
    return "".join(text.split())


def body_only(convention: GoldConvention) -> GoldConvention:
    """A convention under which no tool's headline or byline is put back (the standfirst, body to every source,
    still is): the figures "without the headline"."""
    return convention._replace(title=False, byline=False)


def run_one(extractor: Extractor, payload: Payload) -> dict[str, Any]:
    """Extract and score one page; every exception becomes a recorded failure."""
    html, url, gold, snippets, *rest = payload
    convention = rest[0] if rest else None
    second = rest[1] if len(rest) > 1 else None
    start = time.perf_counter()
    text, no_body, status, reason, message, other = "", False, "ok", "", "", ""
    try:
        ex = extractor.extract(html, url)
        text, no_body = scored_text(ex, convention), ex.no_body
        other = scored_text(ex, second) if second is not None else ""
    except InputError as exc:
        status, reason, message = "failed", exc.reason, str(exc)[:300]
    except Exception as exc:  # noqa: BLE001 - a bug on one page must not stop the batch; it is recorded
        status, reason, message = "failed", "crash", f"{type(exc).__name__}: {exc}"[:300]
    seconds = time.perf_counter() - start
    out = {
        "score": score_page(gold, text, snippets), "status": status, "reason": reason, "message": message,
        "seconds": seconds, "pred_chars": len(text), "no_body": no_body,
    }
    if second is not None:
        out["second"] = {"score": score_page(gold, other, snippets), "pred_chars": len(other)}
    return out


_BUILT: dict[str, Extractor] = {}  # in a worker process: the extractors by name


def _build(names: list[str], opts: dict[str, dict[str, Any]], factory: Factory) -> None:
    """A worker's setup: build the extractors once (a failure stops the evaluation with its message)."""
    _BUILT.clear()
    _BUILT.update({n: factory(n, opts.get(n, {})) for n in names})


def _run_task(task: Task) -> dict[str, Any]:
    """In a worker: one (key, extractor name, payload) task."""
    _, name, payload = task
    return run_one(_BUILT[name], payload)


Task = tuple[Any, str, Payload]


def _failed(reason: str, message: str, gold: str | None, snippets: Any) -> dict[str, Any]:
    """The result of a page that produced no extraction."""
    return {"score": score_page(gold, "", snippets), "status": "failed", "reason": reason, "message": message,
            "seconds": 0.0, "pred_chars": 0, "no_body": False}


def _with_threads(name: str, opts: dict[str, Any], workers: int) -> dict[str, Any]:
    """A model's options with the CLI's thread policy (cores.default_threads) for `workers` processes, unless
    they name their own threads."""
    if name in TORCH and "threads" not in opts:
        return {**opts, "threads": default_threads(max(workers, 1), overlap=True)}
    return opts


def run_tasks(
    tasks: Iterable[Task], names: list[str], opts: dict[str, dict[str, Any]], workers: int,
    timeout_s: float, factory: Factory = default_factory,
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Run (key, extractor name, payload) tasks; yield (key, result) as they finish, in any order.

    With workers >= 1 they run in supervised processes (pool.WorkerPool): a page that kills its worker or
    overruns `timeout_s` is a failed result ("worker-died", "timeout") and a fresh worker goes on.
    """
    opts = {n: _with_threads(n, opts.get(n, {}), workers) for n in names}
    if workers <= 0:
        built = {n: factory(n, opts.get(n, {})) for n in names}
        for key, name, payload in tasks:
            yield key, run_one(built[name], payload)
        return
    try:
        pool = WorkerPool(workers, _run_task, init=_build, init_args=(names, opts, factory), deadline_s=timeout_s,
                          start_timeout_s=STARTUP_TIMEOUT_S)
    except WorkerStartError as exc:
        raise RuntimeError(f"cannot build extractor: {exc}") from None
    try:
        for (key, _, (_, _, gold, snippets, *_)), result, failure in pool.run(tasks):
            if failure is None:
                yield key, result
            else:
                reason, _, message = failure.partition(": ")
                yield key, _failed(reason, message, gold, snippets)
    finally:
        pool.close()


def evaluate_pages(
    cfg: EvalConfig, factory: Factory = default_factory, progress: Callable[[str], None] | None = None,
    bar: bool = False,
) -> tuple[list[PageResult], dict[str, Any]]:
    """Run every extractor over every selected page; return page results and the selection notes. `bar`: a
    progress bar per dataset on stderr (pages x extractors done, rate, time left)."""
    results: list[PageResult] = []
    notes: dict[str, Any] = {}
    for dataset in cfg.datasets:
        positions, note = select(dataset, cfg.split, cfg.limit)
        name = Path(note["path"]).name
        notes[name] = note
        pages: dict[int, Page] = {}
        convention = gold_convention(name)  # scored_text: what the gold holds besides the body
        note["gold_holds"] = convention._asdict()
        note["headline"] = cfg.headline
        if cfg.headline == "without":
            convention = body_only(convention)
        second = body_only(convention) if cfg.headline == "both" else None
        tasks = _tasks(iter_selected(dataset, positions), cfg.extractors, pages, convention, second)
        start = time.monotonic()
        done = run_tasks(tasks, cfg.extractors, cfg.extractor_opts, cfg.workers, cfg.timeout_s, factory)
        if bar:
            from tqdm import tqdm

            done = tqdm(done, total=len(positions) * len(cfg.extractors), desc=name, unit="page", file=sys.stderr,
                        dynamic_ncols=True, leave=False)
        for (idx, ex), res in done:
            results.extend(_page_results(ex, name, pages[idx], res, cfg.headline))
        for page in pages.values():
            if page.meta.get("error"):
                for ex in cfg.extractors:
                    res = _failed("unreadable", str(page.meta["error"])[:300], page.gold, page.snippets)
                    results.extend(_page_results(ex, name, page, res, cfg.headline))
        note["wall_s"] = round(time.monotonic() - start, 2)
        if progress:
            progress(f"{name}: {len(pages)} pages x {len(cfg.extractors)} extractors in {note['wall_s']} s")
    return results, notes


def _tasks(pages: Iterable[Page], extractors: list[str], seen: dict[int, Page],
           convention: GoldConvention | None = None, second: GoldConvention | None = None) -> Iterator[Task]:
    """One task per (page, extractor); every page, stripped of its bytes, is also put into `seen`;
    `convention`: what the dataset's gold holds besides the body (scored_text); `second`: that of a second score."""
    for idx, page in enumerate(pages):
        seen[idx] = _strip(page)
        if page.meta.get("error"):
            continue  # unreadable: recorded by the caller without running anything
        for ex in extractors:
            extra = (convention,) if second is None else (convention, second)
            yield (idx, ex), ex, (page.html, page.url, page.gold, page.snippets, *extra)


def _strip(page: Page) -> Page:
    """The page without its bytes (kept only for the result rows)."""
    return Page(page.id, b"", page.url, page.lang, page.gold, page.snippets, page.split, page.dataset,
                None, page.meta)


def _page_results(extractor: str, dataset: str, page: Page, res: dict[str, Any], headline: str) -> list[PageResult]:
    """The PageResult of a worker's answer, and with EvalConfig.headline "both" that of its second score (the
    extractor's name + BODY_ONLY; a failed page: the same failure)."""
    second = res.pop("second", None)
    out = [_page_result(extractor, dataset, page, res)]
    if headline == "both":
        out.append(_page_result(extractor + BODY_ONLY, dataset, page, {**res, **(second or {})}))
    return out


def _page_result(extractor: str, dataset: str, page: Page, res: dict[str, Any]) -> PageResult:
    """A PageResult from a worker's answer."""
    gold_chars = len("".join((page.gold or "").split()))
    return PageResult(extractor, dataset, page.id, page.lang, gold_chars=gold_chars, **res)


# -------------------------------------------------------------------------------------- 4. aggregate
def summarize_group(rows: list[PageResult]) -> dict[str, Any]:
    """metrics.summarize plus failure counts, no-body counts and speed."""
    out = summarize([r.score for r in rows])
    failed = [r for r in rows if r.status != "ok"]
    out["failed"] = len(failed)
    out["failures_by_reason"] = dict(Counter(r.reason for r in failed))
    out["no_body"] = sum(r.no_body for r in rows)
    timed = [r.seconds for r in rows if r.status == "ok"]
    out["seconds_per_page"] = sum(timed) / len(timed) if timed else None
    return out


def aggregate(results: list[PageResult]) -> list[dict[str, Any]]:
    """Summary rows per (extractor, dataset, language), with ALL for every dataset / language."""
    groups: dict[tuple[str, str, str], list[PageResult]] = {}
    for r in results:
        lang = r.lang or "unknown"
        for key in ((r.extractor, r.dataset, ALL), (r.extractor, r.dataset, lang), (r.extractor, ALL, ALL)):
            groups.setdefault(key, []).append(r)
    rows = []
    for (ex, ds, lang), members in groups.items():
        rows.append({"extractor": ex, "dataset": ds, "lang": lang, **summarize_group(members)})
    return rows


def evaluate(cfg: EvalConfig, factory: Factory = default_factory,
             progress: Callable[[str], None] | None = None, bar: bool = False
             ) -> tuple[dict[str, Any], list[PageResult]]:
    """The whole evaluation: (report dict with config, selection, summary rows and failures; page results)."""
    results, notes = evaluate_pages(cfg, factory, progress, bar)
    failures = [
        {"extractor": r.extractor, "dataset": r.dataset, "id": r.page_id, "reason": r.reason, "message": r.message}
        for r in results if r.status != "ok"
    ]
    report = {
        "bodyblocks_version": __version__,
        "config": asdict(cfg),
        "thresholds": list(THRESHOLDS),
        "selection": notes,
        "summary": aggregate(results),
        "failures": failures,
    }
    return report, results
