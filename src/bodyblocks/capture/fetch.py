"""One URL, start to finish: politeness per host, retries with backoff, and the CapturedPage it ends as.

For every URL a worker takes it
  1. rejects a URL whose scheme no browser should load (no attempt is made),
  2. waits for the host's politeness slot, shared by all workers of the batch,
  3. has the browser load the page once (browser.py),
  4. retries timeouts, network errors and HTTP 429/5xx with exponential backoff; when the browser died
     (crash, killed process) the retry is free once, since the page is rarely to blame.
The last attempt becomes the CapturedPage; failures are pages with a status, never exceptions.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from bodyblocks.capture.browser import _Attempt, _Browser
from bodyblocks.capture.urls import _rejection
from bodyblocks.types import Page


@dataclass
class CapturedPage:
    """One captured URL: the rendered HTML and how the capture went."""

    index: int  # position of the URL in the input, from 0
    url: str  # the URL as given
    final_url: str | None  # after HTTP and script redirects; None when nothing loaded
    html: str  # rendered DOM (page_source); partial after a timeout, "" when nothing loaded
    status: str  # "ok", "http-error" (status >= 400), "timeout" or "error"
    http_status: int | None = None  # status of the main document's response, when the browser reports one
    elapsed: float = 0.0  # seconds of all attempts, browser starts included; politeness and backoff waits not
    error: str | None = None  # why the page failed, None when status is "ok"
    attempts: int = 1  # loads tried (0 when the URL was rejected before loading)
    browser: int = 0  # serial number of the browser instance that made the last attempt

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_page(self) -> Page:
        """The capture as a pipeline Page (id = input position, url = final URL)."""
        meta = {"captured_from": self.url, "status": self.status, "http_status": self.http_status}
        return Page(id=str(self.index), html=self.html, url=self.final_url or self.url, meta=meta)


class _HostThrottle:
    """Hands out request slots so that one host sees at most one request per `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, url: str, stop: threading.Event) -> None:
        """Sleep until this host's next slot (returns early when `stop` is set)."""
        if self.delay <= 0:
            return
        host = urlsplit(url).hostname or ""
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next.get(host, 0.0))
            self._next[host] = slot + self.delay
        stop.wait(slot - now)


def _fetch(browser: _Browser, index: int, url: str, throttle: _HostThrottle, stop: threading.Event) -> CapturedPage:
    """Capture one URL with retries: backoff after page failures, one free retry after a browser crash."""
    opts = browser.opts
    if (reason := _rejection(url)) is not None:
        return CapturedPage(index, url, None, "", "error", error=reason, attempts=0)
    attempts, elapsed, retries_left, crash_pass = 0, 0.0, opts.retries, True
    while True:
        throttle.wait(url, stop)
        attempt = browser.load(url)
        attempts, elapsed = attempts + 1, elapsed + attempt.elapsed
        if not attempt.retryable or stop.is_set():
            break
        if attempt.kind == "crash" and crash_pass:  # the page is rarely to blame for a dead browser
            crash_pass = False
            continue
        if retries_left == 0:
            break
        stop.wait(opts.backoff * 2 ** (opts.retries - retries_left))
        retries_left -= 1
    return _to_page(attempt, index, url, attempts, elapsed)


def _to_page(attempt: _Attempt, index: int, url: str, attempts: int, elapsed: float) -> CapturedPage:
    """The final attempt as a CapturedPage."""
    status, error = attempt.kind, attempt.error
    if status == "crash":
        status = "error"
    elif status == "ok" and attempt.http_status is not None and attempt.http_status >= 400:
        status, error = "http-error", f"HTTP {attempt.http_status}"
    return CapturedPage(
        index, url, attempt.final_url, attempt.html, status, attempt.http_status, elapsed, error, attempts,
        attempt.browser,
    )
