"""Stage 2 of run_batch, in the worker processes (or in-process): read and parse each page under a time limit.

Block extractors on torch get the parsed Document back (the main process classifies pages in groups); any
other extractor, the block extractors on ONNX Runtime included, runs whole in the worker and its Extraction
comes back, rendered for the run's output by the run's `render` when it gives one (outputs.Renderer: the
file's content and the report line's fields, without the blocks). A worker never raises for a page: its
failure comes back as a reason.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bodyblocks.batch.input_identity import digest
from bodyblocks.batch.inputs import Job
from bodyblocks.batch.system import release_free_memory
from bodyblocks.classify.pagekind import with_url
from bodyblocks.errors import InputError
from bodyblocks.loading.registry import Extractor
from bodyblocks.page.decode import declared_language, decode_bytes, read_bytes
from bodyblocks.page.segment import segment
from bodyblocks.types import Document, Extraction

if TYPE_CHECKING:
    from bodyblocks.batch.outputs import Rendered


class PageTimeout(Exception):
    """A page took longer than the per-page limit."""


_EXTRACTOR: Any = None  # the per-process extractor (baselines) or None (block path: segment only)
_SEGMENTER: Callable[[bytes | str], Document] | None = None  # the block path's HTML -> Document
_LIMIT = 60
_EXTRACT_OPTS: dict[str, Any] = {}  # keyword arguments of _EXTRACTOR.extract
_RENDER: Callable[[Job, Extraction], Rendered] | None = None  # an Extraction -> what goes back (None: itself)
TRIM_EVERY = 16  # pages between two hand-backs of freed heap memory (system.release_free_memory)
TRIM_AFTER_BYTES = 1 << 20  # ... and after every page this big
_since_trim = 0


def init_worker(extractor: Extractor | None, limit: int,
                segmenter: Callable[[bytes | str], Document] | None = None,
                render: Callable[[Job, Extraction], Rendered] | None = None) -> None:
    """Set up this process (forked from the run's, or the run's own): the extractor to run whole, or None and
    the block extractor's `segmenter` (None: segment.segment) for pages whose Documents go back; the time
    limit per page (it covers a whole page's extraction, classification included); `render`: what an
    Extraction becomes before it goes back (the run's outputs.Renderer; None: it goes back as it is)."""
    global _EXTRACTOR, _LIMIT, _SEGMENTER, _EXTRACT_OPTS, _RENDER
    _LIMIT = limit
    _SEGMENTER = segmenter
    _RENDER = render
    _EXTRACTOR = extractor  # None for block extractors (a previous run's extractor must not stay)
    opener = getattr(extractor, "open_sessions", None)
    if opener is not None:  # an export that cannot be loaded fails the worker's start, once
        opener()
    # a block extractor run whole: no second thread per page (each core has a worker)
    _EXTRACT_OPTS = {"overlap": False} if getattr(extractor, "whole_pages", False) else {}


def _alarm(_signum: int, _frame: Any) -> None:
    raise PageTimeout(f"took longer than {_LIMIT} s")


# job, its parse or answer (rendered), error, seconds
Result = tuple[Job, "Document | Extraction | Rendered | None", str | None, float]


def work(job: Job) -> Result:
    """Read and parse (or fully extract) one page; never raises."""
    start = time.perf_counter()
    if job.error:
        return job, None, job.error, 0.0
    use_alarm = hasattr(signal, "SIGALRM") and _in_main_thread()
    if use_alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(max(1, _LIMIT))
    global _since_trim
    data: bytes | str = b""
    try:
        if job.html is not None:
            data = job.html
        else:
            data = read_bytes(job.path or "")
            job.digest = digest(data)  # what this page's output is made from (the job goes back with the result)
        if job.language is None:
            job.language = declared_language(data)  # (the job goes back with the result)
        decoded = None
        if job.charset and isinstance(data, bytes):  # the HTTP charset: one more declared one, tried first
            decoded = decode_bytes(data, [job.charset])
        page = data if decoded is None else decoded.text
        if _EXTRACTOR is None:
            result: Document | Extraction = with_url((_SEGMENTER or segment)(page), job.url)
        else:
            result = _EXTRACTOR.extract(page, url=job.url, **_EXTRACT_OPTS)
        if decoded is not None:  # decoded here: the codec is this decoding's, not "str"
            result.encoding, result.replaced, result.guessed = decoded.encoding, decoded.replaced, decoded.guessed
        result.truncated = result.truncated or job.truncated
        if _RENDER is not None and isinstance(result, Extraction):
            return job, _RENDER(job, result), None, time.perf_counter() - start
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
        _since_trim += 1
        if _since_trim >= TRIM_EVERY or len(data) >= TRIM_AFTER_BYTES:  # a long-lived worker's RSS stays flat
            _since_trim = 0
            release_free_memory()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
