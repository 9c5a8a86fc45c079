"""The batch runner's classification of parsed pages: in groups, in input order, the forward pass overlapped.

    scheduler = Scheduler(extractor, overlap=True, write=report.write)
    scheduler.submit(pages)        # a group of parsed pages (job, Document, seconds)
    scheduler.done(job, None, "timeout: ...", secs)   # a page already decided: written in its turn
    scheduler.drain()              # everything in flight written
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, NamedTuple

from bodyblocks.batch.inputs import Job
from bodyblocks.extraction.extractor import StagedExtractor
from bodyblocks.page.decode import read_bytes
from bodyblocks.types import Document, Extraction

if TYPE_CHECKING:
    from bodyblocks.batch.outputs import Rendered

# batches queued for the forward thread at once: a long page's forward pass does not stall the parsing of
# the next ones (with one, this thread waited for every forward pass longer than its own work on a page)
IN_FLIGHT = 4
Write = Callable[[Job, "Extraction | Rendered | None", str | None, float], None]


def classify_pages(extractor: StagedExtractor, docs: list[Document], sources: list[Callable[[], str | bytes]]
                    ) -> list[tuple[Extraction | None, str | None, float]]:
    """(extraction, error, seconds) per page: one forward pass, or page by page when the batch fails."""
    t0 = time.perf_counter()
    try:
        extractions = extractor.extract_documents(docs, sources)
    except (RuntimeError, ValueError) as exc:
        if len(docs) == 1:
            return [(None, f"error: classification failed: {exc}", time.perf_counter() - t0)]
        return [r for d, src in zip(docs, sources, strict=True) for r in classify_pages(extractor, [d], [src])]
    share = (time.perf_counter() - t0) / len(docs)
    return [(ex, None, share) for ex in extractions]


class _ForwardThread:
    """One daemon thread that runs the forward passes in order. A pass that overruns its budget cannot be
    stopped (it is in torch's C++), so the thread is abandoned and a fresh one takes the passes queued behind
    it; a daemon does not hold the process at exit."""

    def __init__(self) -> None:
        self.tasks: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue())
        self.thread = threading.Thread(target=self._run, name="forward", daemon=True)
        self.thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.tasks.put((future, fn, args))
        return future

    def _run(self) -> None:
        while (task := self.tasks.get()) is not None:
            future, fn, args = task
            if not future.set_running_or_notify_cancel():  # cancelled: handed to another thread
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - the waiting thread re-raises it
                future.set_exception(exc)

    def stop(self) -> None:
        self.tasks.put(None)


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return fn(*args), time.perf_counter() - t0


class _Batch(NamedTuple):
    """A batch in flight: forward's future, the prepared batch, its pages, their sources, seconds preparing."""

    future: Any
    prepared: Any
    pending: list[tuple[Job, Document, float]]
    sources: list[Any]
    prep_secs: float


class _Overran(Exception):
    """A batch's classification ran past its budget (SIGALRM, on the main thread)."""


class _Done(NamedTuple):
    """A page whose result is known, queued behind the batches before it."""

    job: Job
    ex: Extraction | Rendered | None
    error: str | None
    secs: float


class Scheduler:
    """Classifies parsed pages in batches and writes the results in input order.

    With `overlap`, a batch's forward pass runs on a background thread while this thread prepares the inputs
    and trees of the next batch, parses the next pages and applies the decision rule to the previous batch:
    torch releases the GIL inside its kernels (and while it waits for a GPU). Only the forward pass leaves
    this thread: NumPy and parsing code on two threads would only fight for the GIL. At most IN_FLIGHT batches
    are in flight, and only this thread writes outputs and counts. A batch that fails is classified again page
    by page, so a broken page costs only itself.
    """

    def __init__(self, extractor: StagedExtractor, overlap: bool, write: Write, page_budget_s: float | None = None
                 ) -> None:
        """`page_budget_s`: a batch whose forward pass (with `overlap`) or classification (without, on the main
        thread) takes longer than this per page fails its pages (timeout) and the run goes on (the page's time
        limit: `--page-timeout`)."""
        self.extractor, self.write, self.page_budget_s = extractor, write, page_budget_s
        self.executor = _ForwardThread() if overlap else None
        self.inflight: deque[_Batch | _Done] = deque()  # oldest first

    def submit(self, pending: list[tuple[Job, Document, float]]) -> None:
        if not pending:
            return
        docs, sources = [d for _, d, _ in pending], [_source(job) for job, _, _ in pending]
        if self.executor is None:
            self._write(pending, self._classify_here(docs, sources))
            return
        t0 = time.perf_counter()
        try:
            prepared = self.extractor.prepare(docs)
        except (RuntimeError, ValueError):
            self.drain()
            self._write(pending, classify_pages(self.extractor, docs, sources))  # page by page
            return
        future = self.executor.submit(_timed, self.extractor.forward, prepared)
        self.inflight.append(_Batch(future, prepared, pending, sources, time.perf_counter() - t0))
        while len(self.inflight) > IN_FLIGHT:
            self._finish_oldest()

    def _classify_here(self, docs: list[Document], sources: list[Callable[[], str | bytes]]
                       ) -> list[tuple[Extraction | None, str | None, float]]:
        """classify_pages on this thread, under the batch's budget when this is the main thread (SIGALRM)."""
        if (self.page_budget_s is None or not hasattr(signal, "setitimer")
                or threading.current_thread() is not threading.main_thread()):
            return classify_pages(self.extractor, docs, sources)
        budget, t0 = self.page_budget_s * len(docs), time.perf_counter()

        def overran(_signum: int, _frame: Any) -> None:
            raise _Overran

        before = signal.signal(signal.SIGALRM, overran)
        signal.setitimer(signal.ITIMER_REAL, budget)
        try:
            return classify_pages(self.extractor, docs, sources)
        except _Overran:
            error = f"timeout: its classification took longer than {budget:g} s ({len(docs)} pages in the batch)"
            return [(None, error, time.perf_counter() - t0)] * len(docs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, before)

    def done(self, job: Job, ex: Extraction | Rendered | None, error: str | None, secs: float) -> None:
        """A page with its result already (a failure, or a page-level extractor's): written in its turn."""
        if self.inflight:
            self.inflight.append(_Done(job, ex, error, secs))
        else:
            self.write(job, ex, error, secs)

    def drain(self) -> None:
        """Finish and write every batch in flight."""
        while self.inflight:
            self._finish_oldest()

    def _finish_oldest(self) -> None:
        item = self.inflight.popleft()
        if isinstance(item, _Done):
            self.write(*item)
            return
        future, prepared, pending, sources, prep_secs = item
        docs = [d for _, d, _ in pending]  # `prepared` is the extractor's own: not read here
        t0 = time.perf_counter()
        budget = None if self.page_budget_s is None else self.page_budget_s * len(docs)
        try:
            probs, fwd_secs = future.result(timeout=budget)
            extractions = self.extractor.finish(prepared, probs, sources)
        except FutureTimeout:
            self._abandon_forward_thread()
            error = f"timeout: its forward pass took longer than {budget:g} s ({len(docs)} pages in the batch)"
            self._write(pending, [(None, error, time.perf_counter() - t0)] * len(docs))
            return
        except (RuntimeError, ValueError):
            self._write(pending, classify_pages(self.extractor, docs, sources))  # page by page
            return
        share = (prep_secs + fwd_secs + time.perf_counter() - t0) / len(docs)
        self._write(pending, [(ex, None, share) for ex in extractions])

    def _abandon_forward_thread(self) -> None:
        """A fresh thread for the forward passes queued behind the one that overran."""
        assert self.executor is not None
        stuck, self.executor = self.executor, _ForwardThread()
        stuck.stop()
        for k, item in enumerate(self.inflight):
            if isinstance(item, _Batch) and item.future.cancel():  # not started: the new thread runs it
                self.inflight[k] = item._replace(future=self.executor.submit(_timed, self.extractor.forward,
                                                                             item.prepared))

    def close(self) -> None:
        """Stop the thread (batches still in flight after an error are abandoned)."""
        if self.executor is not None:
            for item in self.inflight:
                if isinstance(item, _Batch):
                    item.future.cancel()
            self.executor.stop()

    def _write(self, pending: list[tuple[Job, Document, float]],
               results: list[tuple[Extraction | None, str | None, float]]) -> None:
        for (job, _, secs), (ex, error, classify_secs) in zip(pending, results, strict=True):
            self.write(job, ex, error, secs + classify_secs)


def _source(job: Job) -> Callable[[], str | bytes]:
    """The page's HTML on demand (a fallback extractor needs it; the parsed Document does not keep it)."""
    if job.html is not None:
        html = job.html
        return lambda: html
    path = job.path or ""
    return lambda: read_bytes(path)
