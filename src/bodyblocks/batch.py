"""Batch extraction: many pages in, one output file per page plus a run report, nothing lost.

Stages of `run_batch`:
  1. discover inputs (files, folders, a dataset folder with pages.jsonl, a text file of URLs to capture),
     skipping pages whose output already exists (resume);
  2. parse in worker processes, each page under a time limit; block extractors (the model) get the parsed
     Document back and classify several pages per forward pass, other extractors run whole in the worker;
  3. write each output atomically (temp file + rename) and one report line per page, success or failure;
  4. finish with DIR/report.json (totals + every page) and optional review pages for a sample.
Inputs are consumed in bounded windows, so memory stays flat however many pages there are.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from bodyblocks.decode import read_bytes
from bodyblocks.errors import InputError
from bodyblocks.types import Document, Extraction

HTML_SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")
FORMATS = {"txt": ".txt", "json": ".json", "md": ".md"}
OVERLAP_SWITCH_INTERVAL = 0.0005  # seconds (sys.setswitchinterval) while the forward pass overlaps
WINDOW = 256  # pages in flight at once: bounds memory whatever the input size
# batches queued for the forward thread at once: a long page's forward pass does not stall the parsing of
# the next ones (with one, this thread waited for every forward pass longer than its own work on a page)
IN_FLIGHT = 4
# pages per call of a block classifier, up to (the last of a window or before a failed page may be fewer; its
# forward passes are still batch_size pages each): the ensemble's trees walk the whole group in one call;
# walked page by page, the calls themselves cost ~2 ms/page
GROUP = 8


class PageTimeout(Exception):
    """A page took longer than the per-page limit."""


@dataclass
class Job:
    """One page to extract: where it comes from and the name of its output."""

    key: str  # output path relative to DIR, without suffix ("sub/page", a dataset id, a URL index)
    path: str | None = None  # page file
    html: str | None = None  # already in memory (captured pages)
    url: str | None = None
    error: str | None = None  # failed before extraction (e.g. capture)


@dataclass
class Totals:
    """Counts for the run report."""

    pages: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    low_confidence: int = 0
    empty: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


def stem_of(path: Path) -> str:
    """File name without .html / .htm / .html.gz."""
    name = path.name
    for suffix in HTML_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _is_url_list(path: Path) -> bool:
    """A .txt/.urls/.lst file whose non-comment lines are all URLs."""
    if path.suffix.lower() not in (".txt", ".urls", ".lst"):
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [ln.strip() for ln in islice(fh, 50) if ln.strip() and not ln.startswith("#")]
    return bool(lines) and all(ln.split(":", 1)[0] in ("http", "https", "file") for ln in lines)


def iter_jobs(inputs: Iterable[str | Path], capture_opts: dict[str, Any] | None = None) -> Iterator[Job]:
    """Every page named by INPUT arguments, lazily, in a stable order."""
    for raw in inputs:
        path = Path(raw)
        if path.is_dir() and (path / "pages.jsonl").exists():
            yield from _dataset_jobs(path)
        elif path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(HTML_SUFFIXES))
            for f in files:
                rel = f.relative_to(path)
                yield Job(key=str(rel.parent / stem_of(f)) if rel.parent != Path(".") else stem_of(f), path=str(f))
        elif path.is_file() and _is_url_list(path):
            yield from _url_jobs(path, capture_opts or {})
        elif path.is_file():
            yield Job(key=stem_of(path), path=str(path))
        else:
            yield Job(key=stem_of(path), path=str(path), error="not-found: no such file or folder")


def _dataset_jobs(folder: Path) -> Iterator[Job]:
    """Pages of a folder in the shared dataset layout, named by their ids."""
    with open(folder / "pages.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield Job(key=str(rec["id"]), path=str(folder / rec["html"]), url=rec.get("url"))


def _url_jobs(path: Path, capture_opts: dict[str, Any]) -> Iterator[Job]:
    """Render URLs in headless Chromium (capture.py); a failed capture is a failed page."""
    from bodyblocks.capture import capture, read_urls

    for page in capture(read_urls(path), **capture_opts):
        if page.ok:
            yield Job(key=f"{page.index:06d}", html=page.html, url=page.final_url or page.url)
        else:
            yield Job(key=f"{page.index:06d}", url=page.url, error=f"capture-{page.status}: {page.error}")


# ------------------------------------------------------------------------------------------ worker side
_EXTRACTOR: Any = None  # the per-process extractor (baselines) or None (block path: segment only)
_SEGMENTER: Callable[[bytes | str], Document] | None = None  # the block path's HTML -> Document
_LIMIT = 60


def _init_worker(extractor_name: str | None, opts: dict[str, Any], limit: int,
                 segmenter: Callable[[bytes | str], Document] | None = None) -> None:
    global _EXTRACTOR, _LIMIT, _SEGMENTER
    _LIMIT = limit
    _SEGMENTER = segmenter  # the block classifier's page_segmenter (a module-level function: it pickles)
    _EXTRACTOR = None  # block classifiers get parsed Documents back (a previous run's extractor must not stay)
    if extractor_name is not None:
        from bodyblocks.extractors import get_extractor

        _EXTRACTOR = get_extractor(extractor_name, **opts)


def _alarm(_signum: int, _frame: Any) -> None:
    raise PageTimeout(f"took longer than {_LIMIT} s")


def _work(job: Job) -> tuple[Job, Document | Extraction | None, str | None, float]:
    """Read and parse (or fully extract) one page; never raises."""
    start = time.perf_counter()
    if job.error:
        return job, None, job.error, 0.0
    use_alarm = hasattr(signal, "SIGALRM") and _in_main_thread()
    if use_alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(max(1, _LIMIT))
    try:
        data: bytes | str = job.html if job.html is not None else read_bytes(job.path or "")
        if _EXTRACTOR is None:
            from bodyblocks.segment import segment

            result: Document | Extraction = (_SEGMENTER or segment)(data)
        else:
            result = _EXTRACTOR.extract(data, url=job.url)
        return job, result, None, time.perf_counter() - start
    except InputError as exc:
        return job, None, f"{exc.reason}: {exc}", time.perf_counter() - start
    except PageTimeout as exc:
        return job, None, f"timeout: {exc}", time.perf_counter() - start
    except (OSError, ValueError, RecursionError, MemoryError, UnicodeError) as exc:
        return job, None, f"error: {type(exc).__name__}: {exc}", time.perf_counter() - start
    finally:
        if use_alarm:
            signal.alarm(0)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


# ------------------------------------------------------------------------------------------ outputs
def render(ex: Extraction, fmt: str, key: str) -> str:
    """The output file's content in txt, json or md."""
    if fmt == "txt":
        return ex.text + ("\n" if ex.text else "")
    if fmt == "md":
        head = f"# {ex.title}\n\n" if ex.title else ""
        return head + "\n\n".join(ex.text.splitlines()) + "\n"
    rec: dict[str, Any] = {
        "id": key, "title": ex.title, "text": ex.text, "extractor": ex.extractor, "encoding": ex.encoding,
        "confidence": ex.confidence, "low_confidence": ex.low_confidence, "no_body": ex.no_body,
    }
    if ex.blocks is not None:
        probs = ex.probabilities or [None] * len(ex.blocks)
        kept = set(ex.kept or [])
        rec["blocks"] = [
            {"text": b.text, "tag_path": b.tag_path, "p_body": p, "kept": b.index in kept}
            for b, p in zip(ex.blocks, probs, strict=True)
        ]
    return json.dumps(rec, ensure_ascii=False, indent=1) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a killed run never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _entry(job: Job, ex: Extraction | None, error: str | None, seconds: float, out: str | None) -> dict[str, Any]:
    """One page's line of the run report."""
    rec: dict[str, Any] = {"id": job.key, "input": job.path or job.url, "output": out, "seconds": round(seconds, 4)}
    if ex is None:
        return rec | {"status": "failed", "error": error}
    kept = len(ex.kept) if ex.kept is not None else None
    dropped = len(ex.blocks) - kept if ex.blocks is not None and kept is not None else None
    return rec | {
        "status": "ok", "error": None, "encoding": ex.encoding, "chars": len(ex.text), "title": ex.title,
        "blocks_kept": kept, "blocks_dropped": dropped, "confidence": ex.confidence,
        "low_confidence": ex.low_confidence, "no_body": ex.no_body,
    }


# ------------------------------------------------------------------------------------------ the run
@dataclass
class BatchOptions:
    """How to run a batch (CLI flags of `bodyblocks extract`)."""

    extractor: str = "model"
    extractor_opts: dict[str, Any] = field(default_factory=dict)
    fmt: str = "txt"
    workers: int = 1  # parsing processes; 0 or 1 parse in this process
    # pages per forward pass of a block classifier (1 on CPU: no padding; more on GPU); the pages are handed
    # to the classifier up to max(batch_size, GROUP) at a time (the ensemble's trees walk them in one call)
    batch_size: int = 1
    page_timeout: int = 60  # seconds per page (parsing or extraction)
    # the forward pass on a background thread while the next pages are parsed (_Classifier); None: whenever
    # the extractor can (the block classifiers)
    overlap: bool | None = None
    resume: bool = True  # skip pages whose output exists
    review: float = 0.0  # share of pages that get a review page
    progress: bool = True
    capture_opts: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        if not 0.0 <= self.review <= 1.0:
            raise ValueError("review must be a share between 0 and 1")
        if self.batch_size < 1 or self.workers < 0 or self.page_timeout < 1:
            raise ValueError("batch_size and page_timeout must be >= 1, workers >= 0")


def _sampled(key: str, share: float) -> bool:
    """A deterministic sample: the same pages are reviewed on every run."""
    h = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16)
    return h < share * 0xFFFFFFFF


def run_batch(inputs: Iterable[str | Path], out_dir: str | Path, opts: BatchOptions | None = None) -> Totals:
    """Extract every input page into OUT_DIR; returns the totals (also written to OUT_DIR/report.json)."""
    opts = opts or BatchOptions()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from bodyblocks.extractors import TORCH, get_extractor

    extractor_opts = dict(opts.extractor_opts)
    if opts.extractor in TORCH:  # the model's forward passes are batch_size pages, whatever the group
        extractor_opts.setdefault("batch_size", opts.batch_size)
    main_extractor = get_extractor(opts.extractor, **extractor_opts)
    group = max(opts.batch_size, GROUP)
    block_based = hasattr(main_extractor, "extract_documents")
    totals, start = Totals(), time.perf_counter()
    suffix = FORMATS[opts.fmt]
    lines_path = out / "report.pages.jsonl"
    jobs = iter_jobs(inputs, opts.capture_opts)
    bar = _progress(opts.progress)
    init = (None if block_based else opts.extractor, opts.extractor_opts, opts.page_timeout,
            getattr(main_extractor, "page_segmenter", None) if block_based else None)
    pool = mp.get_context("fork").Pool(opts.workers, _init_worker, init) if opts.workers > 1 else None
    if pool is None:
        _init_worker(*init)
    classifier: _Classifier | None = None
    switch: float | None = None
    try:
        with open(lines_path, "w", encoding="utf-8") as lines:
            def write(job: Job, ex: Extraction | None, error: str | None, secs: float) -> None:
                _finish(job, ex, error, secs, out, suffix, opts, lines, totals, bar)

            overlap = can_overlap(main_extractor) and (opts.overlap if opts.overlap is not None else True)
            if overlap:  # the forward thread gets the GIL back soon after each kernel (default: 5 ms)
                switch = sys.getswitchinterval()
                sys.setswitchinterval(OVERLAP_SWITCH_INTERVAL)
            classifier = _Classifier(main_extractor, overlap, write)
            while True:
                window = list(islice(jobs, WINDOW))
                if not window:
                    break
                todo = []
                for job in window:
                    target = out / (job.key + suffix)
                    if opts.resume and target.exists() and not job.error:
                        totals.pages += 1
                        totals.skipped += 1
                        lines.write(json.dumps({"id": job.key, "status": "skipped", "output": str(target)}) + "\n")
                    else:
                        todo.append(job)
                results = pool.imap(_work, todo, chunksize=2) if pool else map(_work, todo)
                pending: list[tuple[Job, Document, float]] = []
                for job, result, error, secs in results:
                    if block_based and isinstance(result, Document):
                        pending.append((job, result, secs))
                        if len(pending) >= group:
                            classifier.submit(pending)
                            pending = []
                    else:  # a failed page, or another extractor's answer: written after the pages before it
                        classifier.submit(pending)
                        pending = []
                        classifier.done(job, result if isinstance(result, Extraction) else None, error, secs)
                classifier.submit(pending)
                classifier.drain()
                lines.flush()
                release_free_memory()
    finally:
        if classifier is not None:
            classifier.close()
        if switch is not None:
            sys.setswitchinterval(switch)
        if pool is not None:
            pool.terminate()
        if bar is not None:
            bar.close()
    totals.seconds = time.perf_counter() - start
    _write_report(out, lines_path, totals, opts)
    return totals


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where the C library is glibc (Linux); else None.

    Looked up among the symbols already loaded (not with ctypes.util.find_library, which forks `ldconfig`: a
    child that counts this whole process as its own peak RSS)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError, TypeError):  # no glibc (macOS, musl: no such symbol; Windows: no CDLL(None))
        return None


def release_free_memory() -> bool:
    """Hand the heap's free pages back to the OS (glibc malloc_trim); True when it could.

    Pages have every block count and n-gram count there is, so the forward pass frees buffers of ever new
    sizes; glibc keeps the freed memory in its heap, fragmented, and RSS crept up over a long run
    (benchmarks/memory_flat.py: 614 to 871 MB median by fifth over 20,000 pages; one malloc_trim after a
    6,000-page loop of random sizes took RSS from 440 back to 332 MB). run_batch calls it after every
    window of pages (a few ms: 2-9 ms measured).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(workers: int, overlap: bool = False) -> int:
    """Torch threads of the model in `bodyblocks extract`: the usable cores shared by the parsing workers,
    less the one this thread keeps busy with parsing and NumPy while the forward pass overlaps them."""
    return max(1, usable_cores() // max(1, workers) - int(overlap))


def _classify_pages(extractor: Any, docs: list[Document], sources: list[Callable[[], str | bytes]]
                    ) -> list[tuple[Extraction | None, str | None, float]]:
    """(extraction, error, seconds) per page: one forward pass, or page by page when the batch fails."""
    t0 = time.perf_counter()
    try:
        extractions = extractor.extract_documents(docs, sources)
    except (RuntimeError, ValueError) as exc:
        if len(docs) == 1:
            return [(None, f"error: classification failed: {exc}", time.perf_counter() - t0)]
        return [r for d, src in zip(docs, sources, strict=True) for r in _classify_pages(extractor, [d], [src])]
    share = (time.perf_counter() - t0) / len(docs)
    return [(ex, None, share) for ex in extractions]


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return fn(*args), time.perf_counter() - t0


def can_overlap(extractor: Any) -> bool:
    """Whether an extractor classifies in the three steps _Classifier overlaps (ModelExtractor and kin)."""
    return all(callable(getattr(extractor, m, None)) for m in ("prepare", "forward", "finish"))


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


class _Classifier:
    """Classifies parsed pages in batches and writes the results in input order.

    With `overlap`, a batch's forward pass runs on a background thread while this thread prepares the inputs
    and trees of the next batch, parses the next pages and applies the decision rule to the previous batch:
    torch releases the GIL inside its kernels (and while it waits for a GPU). Only the forward pass leaves
    this thread: NumPy and parsing code on two threads would only fight for the GIL. At most IN_FLIGHT batches
    are in flight, and only this thread writes outputs and counts. A batch that fails is classified again page
    by page, so a broken page costs only itself.
    """

    def __init__(self, extractor: Any, overlap: bool, write: Callable[[Job, Extraction | None, str | None, float],
                                                                       None]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.extractor, self.write = extractor, write
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="forward") if overlap else None
        self.inflight: deque[_Batch | _Done] = deque()  # oldest first

    def submit(self, pending: list[tuple[Job, Document, float]]) -> None:
        if not pending:
            return
        docs, sources = [d for _, d, _ in pending], [_source(job) for job, _, _ in pending]
        if self.executor is None:
            self._write(pending, _classify_pages(self.extractor, docs, sources))
            return
        t0 = time.perf_counter()
        try:
            prepared = self.extractor.prepare(docs)
        except (RuntimeError, ValueError):
            self.drain()
            self._write(pending, _classify_pages(self.extractor, docs, sources))  # page by page
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
            self._write(pending, _classify_pages(self.extractor, docs, sources))  # page by page
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


def _finish(job: Job, ex: Extraction | None, error: str | None, secs: float, out: Path, suffix: str,
            opts: BatchOptions, lines: Any, totals: Totals, bar: Any) -> None:
    """Write one page's output and report line, and count it."""
    totals.pages += 1
    target = None
    if ex is not None:
        target = out / (job.key + suffix)
        try:
            write_atomic(target, render(ex, opts.fmt, job.key))
        except OSError as exc:
            ex, error, target = None, f"write-failed: {exc}", None
    if ex is None:
        totals.failed += 1
        reason = (error or "error").split(":", 1)[0]
        totals.reasons[reason] = totals.reasons.get(reason, 0) + 1
    else:
        totals.ok += 1
        totals.low_confidence += ex.low_confidence
        totals.empty += not ex.text
        if opts.review and _sampled(job.key, opts.review):
            from bodyblocks.review import write_review

            write_review(out / "review" / (job.key + ".html"), job.key, ex)
    lines.write(json.dumps(_entry(job, ex, error, secs, str(target) if target else None), ensure_ascii=False) + "\n")
    if bar is not None:
        bar.update(1)
        bar.set_postfix(failed=totals.failed, refresh=False)


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(unit="page", file=sys.stderr, dynamic_ncols=True)


def _write_report(out: Path, lines_path: Path, totals: Totals, opts: BatchOptions) -> None:
    """report.json: totals and every page, streamed from the per-page lines (memory stays flat)."""
    tmp = out / ".report.json.tmp"
    head = {
        "extractor": opts.extractor, "format": opts.fmt,
        "totals": {k: v for k, v in vars(totals).items()},
        "pages_per_s": round(totals.pages / totals.seconds, 3) if totals.seconds else None,
    }
    with open(tmp, "w", encoding="utf-8") as fh, open(lines_path, encoding="utf-8") as src:
        fh.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "pages": [\n')
        for i, line in enumerate(src):
            fh.write(("," if i else "") + line)
        fh.write("]}\n")
    os.replace(tmp, out / "report.json")
    if opts.review:
        from bodyblocks.review import write_review_index

        write_review_index(out / "review")
