"""The batch: a feeder thread, one worker thread per browser, and the results handed back in input order.

The feeder enumerates the URLs lazily into a small bounded queue (a generator of URLs is never read far
ahead); each worker owns one _Browser and turns tasks into CapturedPages (fetch.py); the caller's thread
reorders them by index. Selenium is imported only when a capture starts: capture() checks the binaries and
Selenium at once, so a missing browser fails before any thread starts.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from contextlib import suppress

from bodyblocks.capture.browser import _Browser
from bodyblocks.capture.chromium import check_available
from bodyblocks.capture.fetch import CapturedPage, _fetch, _HostThrottle
from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM, CaptureOptions


def capture(
    urls: Iterable[str],
    *,
    concurrency: int = 1,
    timeout: float = 30.0,
    wait: float = 0.5,
    retries: int = 1,
    backoff: float = 1.0,
    recycle_after: int = 50,
    politeness: float = 1.0,
    chromium: str = CHROMIUM,
    chromedriver: str = CHROMEDRIVER,
) -> Iterator[CapturedPage]:
    """Render each URL in headless Chromium and yield the results in input order.

    Args:
        urls: http(s) or file URLs; read lazily, so a generator works.
        concurrency .. chromedriver: see CaptureOptions.

    Returns:
        An iterator of CapturedPage, one per URL, in input order; failures are pages with a status, never
        exceptions. Closing the iterator early stops the workers and their browsers.

    Raises:
        CaptureUnavailable: at once when a binary or Selenium is missing; while iterating when the browser
            fails to start repeatedly.
    """
    opts = CaptureOptions(
        concurrency, timeout, wait, retries, backoff, recycle_after, politeness, chromium, chromedriver
    )
    check_available(chromium, chromedriver)
    return _run(urls, opts)


_Result = CapturedPage | BaseException | None  # None: a worker finished
_Tasks = queue.Queue[tuple[int, str] | None]  # None: no more URLs


def _feed(urls: Iterable[str], tasks: _Tasks, results: queue.Queue[_Result], stop: threading.Event,
          workers: int) -> None:
    """Put (index, url) tasks on the queue, then one end marker per worker."""
    try:
        for task in enumerate(urls):
            if not _put(tasks, task, stop):
                return
    except BaseException as exc:  # a failing input iterator ends the batch with its exception
        results.put(exc)
    for _ in range(workers):
        _put(tasks, None, stop)


def _work(opts: CaptureOptions, tasks: _Tasks, results: queue.Queue[_Result], stop: threading.Event,
          throttle: _HostThrottle) -> None:
    """One browser's loop: take tasks until the end marker or stop, and always close the browser."""
    browser = _Browser(opts)
    try:
        while (task := _get(tasks, stop)) is not None:
            results.put(_fetch(browser, *task, throttle, stop))
    except BaseException as exc:
        results.put(exc)
    finally:
        browser.close()
        results.put(None)


def _put(tasks: _Tasks, item: tuple[int, str] | None, stop: threading.Event) -> bool:
    """Put an item, giving up (False) once the batch is stopped."""
    while not stop.is_set():
        with suppress(queue.Full):
            tasks.put(item, timeout=0.1)
            return True
    return False


def _get(tasks: _Tasks, stop: threading.Event) -> tuple[int, str] | None:
    """The next task, or None at the end marker or once the batch is stopped."""
    while not stop.is_set():
        with suppress(queue.Empty):
            return tasks.get(timeout=0.1)
    return None


def _run(urls: Iterable[str], opts: CaptureOptions) -> Iterator[CapturedPage]:
    """Start the feeder and the worker threads; yield their pages in input order."""
    tasks: _Tasks = queue.Queue(maxsize=2 * opts.concurrency)
    results: queue.Queue[_Result] = queue.Queue()
    stop, throttle = threading.Event(), _HostThrottle(opts.politeness)
    threads = [threading.Thread(target=_feed, args=(urls, tasks, results, stop, opts.concurrency), daemon=True)]
    threads += [threading.Thread(target=_work, args=(opts, tasks, results, stop, throttle), daemon=True)
                for _ in range(opts.concurrency)]
    for thread in threads:
        thread.start()
    pending: dict[int, CapturedPage] = {}
    next_index, running = 0, opts.concurrency
    try:
        while running:
            item = results.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                pending[item.index] = item
            while next_index in pending:
                yield pending.pop(next_index)
                next_index += 1
    finally:
        stop.set()  # also when the caller closes the iterator early: workers finish their page and quit
        for thread in threads:
            thread.join()
