"""The batch runner's classification of parsed pages: in groups, in input order, the forward pass overlapped.

    scheduler = Scheduler(extractor, overlap=True, write=report.write)
    scheduler.submit(pages)        # a group of parsed pages (job, Document, seconds)
    scheduler.done(job, None, "timeout: ...", secs)   # a page already decided: written in its turn
    scheduler.drain()              # everything in flight written
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from bodyblocks.batch.inputs import Job
from bodyblocks.decode import read_bytes
from bodyblocks.inference.blocks import StagedExtractor
from bodyblocks.types import Document, Extraction

# batches queued for the forward thread at once: a long page's forward pass does not stall the parsing of
# the next ones (with one, this thread waited for every forward pass longer than its own work on a page)
IN_FLIGHT = 4
Write = Callable[[Job, Extraction | None, str | None, float], None]


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


class _Done(NamedTuple):
    """A page whose result is known, queued behind the batches before it."""

    job: Job
    ex: Extraction | None
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

    def __init__(self, extractor: StagedExtractor, overlap: bool, write: Write) -> None:
        self.extractor, self.write = extractor, write
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="forward") if overlap else None
        self.inflight: deque[_Batch | _Done] = deque()  # oldest first

    def submit(self, pending: list[tuple[Job, Document, float]]) -> None:
        if not pending:
            return
        docs, sources = [d for _, d, _ in pending], [_source(job) for job, _, _ in pending]
        if self.executor is None:
            self._write(pending, classify_pages(self.extractor, docs, sources))
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

    def done(self, job: Job, ex: Extraction | None, error: str | None, secs: float) -> None:
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
        try:
            probs, fwd_secs = future.result()
            extractions = self.extractor.finish(prepared, probs, sources)
        except (RuntimeError, ValueError):
            self._write(pending, classify_pages(self.extractor, docs, sources))  # page by page
            return
        share = (prep_secs + fwd_secs + time.perf_counter() - t0) / len(docs)
        self._write(pending, [(ex, None, share) for ex in extractions])

    def close(self) -> None:
        """Stop the thread (batches still in flight after an error are abandoned)."""
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)

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
