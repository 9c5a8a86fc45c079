"""Batch extraction: many pages in, one output file per page plus a run report, nothing lost.

    totals = run_batch(["pages/"], "out/", BatchOptions(extractor="ensemble"))

Stages of `run_batch`:
  1. discover inputs (inputs.py: files, folders, a dataset folder with pages.jsonl, a text file of URLs to
     capture, WARC files), skipping pages whose output already exists (resume; a columnar format's: those an
     earlier run wrote into a shard that exists), each keyed apart from the folder's other pages (keys.py);
  2. in worker processes (one per usable core by default, no more than there are pages), each page under a
     time limit (worker.py): block extractors on torch parse there, get the parsed Document back and classify
     groups of pages here (scheduler.py, the forward pass on a second thread); other extractors (ONNX
     Runtime's included) run whole pages in the workers;
  3. write each output atomically and one report line per page, success or failure (outputs.py; the
     columnar formats a row per page into shards, columnar.py);
  4. finish with DIR/report.json (totals + every page) and optional review pages for a sample.
Inputs are consumed in bounded windows, so memory stays flat however many pages there are.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

from bodyblocks.batch.columnar import COLUMNAR, SHARD_SIZE
from bodyblocks.batch.input_identity import same_input
from bodyblocks.batch.inputs import Job, count_pages, iter_jobs, stamp
from bodyblocks.batch.journal import OutputUnwritable
from bodyblocks.batch.keys import FolderKeys
from bodyblocks.batch.outputs import FORMATS, Rendered, Report, Totals, progress_bar
from bodyblocks.batch.scheduler import Scheduler
from bodyblocks.batch.system import release_free_memory
from bodyblocks.batch.warc import is_warc
from bodyblocks.batch.worker import Result, init_worker, work
from bodyblocks.extraction.extractor import StagedExtractor, overlapping
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.loading.plan import Plan, make_plan
from bodyblocks.loading.registry import TRAINED, Extractor
from bodyblocks.runtime.cores import usable_cores
from bodyblocks.runtime.pool import WorkerPool, WorkerStartError, few_collections
from bodyblocks.types import Document, Extraction

WINDOW = 256  # pages in flight at once: bounds memory whatever the input size
# pages per call of a block classifier, up to (the last of a window or before a failed page may be fewer; its
# forward passes are still batch_size pages each): the ensemble's trees walk the whole group in one call;
# walked page by page, the calls themselves cost ~2 ms/page
GROUP = 8
# pages written one after the other, a burst at a time: the run's process wakes for every page a worker sends back,
# but writing a file and its journal line right after the last costs about half as much CPU (the system's caches
# are still warm) as after a wait. A run that is killed loses the pages of its burst with those still in the
# workers; they are done again when it is resumed.
BURST = 8
# a worker process holding one page longer than twice the page's time limit plus this is killed (the page's
# own limit, SIGALRM inside the worker, cannot interrupt code stuck in C)
WORKER_GRACE_S = 5


@dataclass
class BatchOptions:
    """How to run a batch (CLI flags of `bodyblocks extract`)."""

    # the extractor's name; None: the library's default (registry.default_extractor_name: the kind of
    # options.checkpoint's folder, else of $BODYBLOCKS_MODEL's, else the ensemble), set here when built
    extractor: str | None = None
    # how a trained extractor (model, gbt, ensemble) runs: device, engine, threshold, vote, fallback, ... and
    # batch_size: pages per forward pass of a block classifier; what is left None (the checkpoint, threads,
    # batch_size: 1, as on a CPU padding costs more than batching saves, 64 on torch on a GPU) is set here when
    # built, as `plan` has it; the pages are handed to the classifier up to max(batch_size, GROUP) at a time
    # (the ensemble's trees walk them in one call)
    options: ExtractOptions = field(default_factory=ExtractOptions)
    fmt: str = "txt"
    # worker processes; 0 or 1: this process alone; None: one per usable core for extractors that run whole pages
    # in the workers (ONNX Runtime, the trees, the baselines), 1 for the torch model (then this process
    # classifies, its forward pass on a second thread)
    workers: int | None = None
    page_timeout: int = 60  # seconds per page (parsing or extraction)
    # the forward pass on a background thread while the next pages are parsed (scheduler.Scheduler); None:
    # whenever the extractor can (those with a model)
    overlap: bool | None = None
    resume: bool = True  # skip pages whose output exists
    review: float = 0.0  # share of pages that get a review page
    progress: bool = True
    capture_opts: dict[str, Any] = field(default_factory=dict)
    shard_size: int = SHARD_SIZE  # pages per shard of the columnar formats (parquet, jsonl)
    # once the run starts (its folder locked, its settings checked): "bodyblocks extract: <model> on <engine>"
    # on stderr, the first line of the CLI's run
    announce: bool = False
    # read symbolic links under an input folder (or a dataset's html paths) wherever they lead; by default one
    # that leads out of its input fails its entry (outside-input, outside-dataset)
    follow_symlinks: bool = False
    # the extractor, its checkpoint, engine, threads and batch size, worked out from the above when these options
    # are built (loading/plan.make_plan); what report.json says made the outputs (Plan.describe)
    plan: Plan = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.options, ExtractOptions):
            raise TypeError(f"options must be an ExtractOptions, got {type(self.options).__name__}")
        if self.fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        if not 0.0 <= self.review <= 1.0:
            raise ValueError("review must be a share between 0 and 1")
        if (self.workers is not None and self.workers < 0) or self.page_timeout < 1:
            raise ValueError("page_timeout must be >= 1, workers >= 0")
        if self.shard_size < 1:
            raise ValueError("shard_size must be >= 1")
        plan = make_plan(self.extractor, self.options, workers=self.workers, overlap=self.overlap, runner=True)
        if self.fmt in ("md", *COLUMNAR) and plan.extractor in TRAINED and not plan.options.marks:
            # md, and the shards' markdown column: links, emphasis
            plan = replace(plan, options=replace(plan.options, marks=True))
        if self.fmt == "txt" and plan.extractor in TRAINED and plan.options.dates:  # txt shows no date
            plan = replace(plan, options=replace(plan.options, dates=False))
        self.plan, self.extractor, self.options = plan, plan.extractor, plan.options

    @property
    def name(self) -> str:
        """The extractor's name (`extractor`, resolved when these options were built)."""
        assert self.extractor is not None
        return self.extractor

    @property
    def batch_size(self) -> int:
        """Pages per forward pass of a block classifier (the plan's)."""
        return self.plan.batch_size

    def output_settings(self) -> dict[str, Any]:
        """What the outputs depend on besides the extractor's name and the format, as the folder's journal keeps
        it (ExtractOptions.output_settings; nothing for an extractor without options)."""
        return self.options.output_settings() if self.name in TRAINED else {}


def run_batch(inputs: Iterable[str | Path], out_dir: str | Path, opts: BatchOptions | None = None,
              extractor: Extractor | None = None) -> Totals:
    """Extract every input page into OUT_DIR; returns this run's totals (OUT_DIR/report.json has them, and the
    totals over every page of the folder).

    Args:
        inputs: page files, folders, dataset folders, URL lists.
        out_dir: the output folder.
        opts: how to run; its `extractor` names the extractor to build (and the report's extractor).
        extractor: one built already, used in place of building opts.plan's (workers get it by fork).
    """
    opts = opts or BatchOptions()
    extractor = extractor or opts.plan.build()  # a bad checkpoint fails before OUT_DIR is touched
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"the output folder {out} is a file")
    out.mkdir(parents=True, exist_ok=True)
    settings = opts.output_settings()
    # the folder's lock and journal first: a second run into it, or one with other settings, is refused at once
    inputs = list(inputs)
    total = count_pages(inputs, out=out) if opts.progress else None
    report = Report(out, opts.fmt, opts.name, opts.review, False, settings, opts.resume, total,
                    opts.shard_size, model=opts.plan.describe())
    if opts.announce:  # once the folder is ours (a busy one is refused in one line), and before the bar is drawn
        print(f"bodyblocks extract: {opts.plan.headline()}", file=sys.stderr, flush=True)
    if opts.progress:
        report.bar = progress_bar(total)
    start, status, sigint = time.perf_counter(), "complete", None
    try:
        with _signals_stop_the_run():
            _run(inputs, opts, extractor, report)
    except (Interrupted, KeyboardInterrupt):
        status = "interrupted"
        sigint = _hold_sigint()  # a second Ctrl-C (the process group's, an impatient user's) stops no report
        raise
    except BaseException as exc:
        status = f"failed: {type(exc).__name__}: {exc}"
        raise
    finally:
        report.close(complete=status == "complete")  # a columnar format's last shard only after its last page
        try:
            report.write_report(time.perf_counter() - start, status)  # 4. report.json, whatever stopped the run
        except OutputUnwritable:  # the review index (it names its file)
            if status == "complete":  # else the error that stopped the run is the one to tell
                raise
        except OSError as exc:
            if status == "complete":
                raise OutputUnwritable(f"cannot write {out / 'report.json'}: {exc.strerror or exc}") from exc
        finally:
            if sigint is not None:
                signal.signal(signal.SIGINT, sigint)
    return report.totals


def _hold_sigint() -> Any:
    """Ignore SIGINT (in the main thread); the handler before, to give back, or None elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def runs_staged(extractor: Extractor) -> bool:
    """Whether the run's workers only parse and this process classifies (a block extractor on torch), or the
    workers run whole pages (every other extractor)."""
    return isinstance(extractor, StagedExtractor) and not extractor.whole_pages


def default_workers(extractor: Extractor) -> int:
    """Worker processes when none are asked for: one per usable core for whole pages, else 1 (BatchOptions)."""
    return 1 if runs_staged(extractor) else usable_cores()


def _run(inputs: list[str | Path], opts: BatchOptions, extractor: Extractor, report: Report) -> None:
    """Stages 1-3: windows of jobs, parsed (or extracted whole) in the workers, classified and written here."""
    staged = runs_staged(extractor)
    workers = opts.workers if opts.workers is not None else default_workers(extractor)
    # 2. the workers parse (a block extractor's pages on torch: its page_segmenter) or extract whole (the others)
    # and render what they extracted for the report, which then has no blocks to receive
    init = (None if staged else extractor, opts.page_timeout, extractor.page_segmenter if staged else None,
            None if staged else report.renderer)
    pool = None
    if workers > 1:  # a worker that dies or hangs fails its page; a fresh one takes its place
        warm_up = getattr(extractor, "warm_up", None)
        if warm_up is not None:  # first-page costs (imports, tables) paid here once, inherited by every worker
            warm_up()
        try:
            pool = WorkerPool(_pool_size(inputs, workers, report.out), _work_at, init=init_worker, init_args=init,
                              deadline_s=2 * opts.page_timeout + WORKER_GRACE_S)
        except WorkerStartError as exc:  # e.g. an export ONNX Runtime cannot load: the run's one error
            raise ValueError(str(exc)) from None
    else:
        init_worker(*init)
    overlap = staged and extractor.overlaps and (opts.overlap if opts.overlap is not None else True)
    scheduler = Scheduler(extractor if staged else None, overlap, report.write, opts.page_timeout)
    with overlapping(overlap), few_collections():  # the workers collect as rarely (pool._main)
        try:
            # a URL list's page done already is not captured again (a columnar format knows shards, not pages)
            done = (lambda key: report.target_for(key).exists()) if opts.resume and not report.shards else None
            # keys unique over the folder's runs: a page of another input keeps its output (keys.FolderKeys)
            unique = FolderKeys(report.journal.line, same_input) if opts.resume else None
            jobs = iter_jobs(inputs, opts.capture_opts, done, out=report.out, follow_symlinks=opts.follow_symlinks,
                             unique=unique)
            for window in _windows(jobs):  # 1. inputs, WINDOW at a time
                todo = _not_done(window, report, opts.resume)
                # a page stuck past its limit holds the later ones back only while order counts (shards)
                stuck_s = None if report.shards is not None else opts.page_timeout
                results = _in_order(pool, todo, stuck_s) if pool else map(work, todo)
                _classify(results, scheduler, staged, max(opts.batch_size, GROUP))
                report.flush()
                release_free_memory()
        finally:
            scheduler.close()
            if pool is not None:
                pool.close()


def _pool_size(inputs: Iterable[str | Path], workers: int, out: Path) -> int:
    """`workers` worker processes, or as many as there are pages when that is fewer (a worker that gets no page
    costs its start-up all the same: a fork, its ONNX Runtime sessions opened, ~0.05 s of CPU); a WARC file's
    pages are known only once it is read: as many as `workers`."""
    counted = 0
    for raw in inputs:  # counted as far as `workers` pages
        path = Path(raw)
        if path.is_file() and is_warc(path):
            return workers
        counted += count_pages([path], stop_at=workers - counted, out=out) or 0
        if counted >= workers:
            return workers
    return max(1, counted)


class Interrupted(Exception):
    """A signal (SIGTERM) stopped the run; report.json was written first."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


@contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """SIGTERM raises Interrupted in this thread (SIGINT raises KeyboardInterrupt already), so that the run
    stops through its `finally`s: workers stopped, journal synced, report.json written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _work_at(task: tuple[int, Job]) -> Result:
    """worker.work on the job of an (index, job) task (in a worker process)."""
    return work(task[1])


def _in_order(pool: WorkerPool, todo: list[Job], stuck_s: float | None = None) -> Iterator[Result | None]:
    """The workers' results in the jobs' order; a job whose worker died or overran is a failed result.

    `stuck_s` (the page time limit; None: strict order): a page whose results behind it have waited that long
    is past its own limit, stuck where its alarm cannot reach it (inside C code) until its worker is killed at
    the pool's deadline; the pages behind it go out as they come, each followed by None (write now: nothing
    after them may come for a while), and it in its own time."""
    held: dict[int, Result] = {}
    gone: set[int] = set()  # positions given out ahead of their turn
    position = 0
    waiting_since: float | None = None  # when results first waited behind the page at `position`
    for finished in pool.rounds(enumerate(todo), tick_s=None if stuck_s is None else min(1.0, stuck_s)):
        for (i, job), result, failure in finished:
            held[i] = result if failure is None else (job, None, failure, 0.0)
        start = position
        while position in held or position in gone:
            if position in held:
                yield held.pop(position)
            gone.discard(position)
            position += 1
        if position != start or not held:
            waiting_since = None if not held else time.monotonic()
        elif waiting_since is None:
            waiting_since = time.monotonic()
        if stuck_s is not None and held and waiting_since is not None \
                and time.monotonic() - waiting_since >= stuck_s:
            for i in sorted(held):  # behind a stuck page: out of turn rather than held until it is killed
                gone.add(i)
                yield held.pop(i)
            yield None


def _windows(jobs: Iterator[Job]) -> Iterator[list[Job]]:
    """The jobs WINDOW at a time."""
    while window := list(islice(jobs, WINDOW)):
        yield window


def _not_done(window: list[Job], report: Report, resume: bool) -> list[Job]:
    """The window's jobs still to do; with `resume`, those whose output exists are reported as skipped."""
    todo = []
    for job in window:
        # a page file's, before it is read (a change made after shows on resume); a WARC record is known by its id
        if job.path is not None and job.html is None and job.record_id is None and not job.error:
            job.stamp = stamp(job.path)
        if job.filtered:
            report.filtered(job)
        elif resume and (report.shards is not None or not job.error) and report.is_done(job):
            report.skipped(job)
        else:
            todo.append(job)
    return todo


def _classify(results: Iterable[Result | None], scheduler: Scheduler, staged: bool, group: int) -> None:
    """Stages 2-3 for one window: parsed pages to the scheduler in groups, the rest written in their turn, BURST
    at a time (a run stopped by a signal writes those it holds first); a None among the results writes every
    page held (the pages behind a stuck one, _in_order)."""
    pending: list[tuple[Job, Document, float]] = []
    decided: list[Result] = []  # pages with their answer (or failure), not yet written

    def write_decided() -> None:
        while decided:  # each taken before it is written: a signal in the middle writes none twice
            job, result, error, secs = decided.pop(0)
            scheduler.done(job, result if isinstance(result, Extraction | Rendered) else None, error, secs)

    try:
        for item in results:
            if item is None:
                write_decided()
                scheduler.submit(pending)
                pending = []
                scheduler.drain()
            elif staged and isinstance(item[1], Document):
                write_decided()
                pending.append((item[0], item[1], item[3]))
                if len(pending) >= group:
                    scheduler.submit(pending)
                    pending = []
            else:  # a failed page, or another extractor's answer: written after the pages before it
                scheduler.submit(pending)
                pending = []
                decided.append(item)
                if len(decided) >= BURST:
                    write_decided()
    except (Interrupted, KeyboardInterrupt):
        try:
            write_decided()
        except OutputUnwritable:  # the signal is what stopped the run
            pass
        raise
    write_decided()
    scheduler.submit(pending)
    scheduler.drain()
