"""Headless-browser capture: URLs -> rendered HTML, through Selenium 4 and Debian's Chromium.

Each worker thread owns one browser and, for every URL it takes,
  1. waits for the host's politeness slot,
  2. loads the page under a page-load timeout (a page that never finishes is recorded as "timeout"),
  3. waits for ``document.readyState == 'complete'`` plus a settle time for late scripts,
  4. reads ``page_source``, the final URL and the HTTP status of the main document,
  5. retries timeouts, network errors and HTTP 429/5xx with exponential backoff; when the browser died
     (crash, killed process) it starts a fresh one and retries the page.
Browsers are recycled after ``recycle_after`` pages. Selenium is imported only when a capture starts, and
Selenium Manager is never consulted (the driver path is always given), so nothing is downloaded.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bodyblocks.types import Page

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL_HINT = "apt-get install chromium chromium-driver"

# Run as root in a container (no sandbox, no GPU, no /dev/shm) and never reach the network on the browser's
# own initiative (no QUIC, first-run pings, component updates, sync or background requests).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Measured with strace and --log-net-log on Debian's Chromium 156: with CHROMIUM_FLAGS alone the browser still
# contacts clients2.google.com (network time), optimizationguide-pa.googleapis.com (optimization hints),
# update.googleapis.com (a built-in component's update check), accounts.google.com (ListAccounts) and
# start.duckduckgo.com (the third-party new-tab page warms up the default search engine). The features are
# switched off where a switch exists; every one of these hosts is made unresolvable. Re-measure after upgrades.
_SERVICE_HOSTS = (
    "accounts.google.com",
    "clients2.google.com",
    "update.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "start.duckduckgo.com",
)
QUIET_FLAGS = (
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints",  # chromedriver merges its own list in
    "--host-resolver-rules=" + ", ".join(f"MAP {host} ~NOTFOUND" for host in _SERVICE_HOSTS),
)

# Fragments of chromedriver messages that mean the session is gone: restart the browser, retry the page.
DEAD_SESSION = (
    "invalid session id",
    "no such session",
    "session deleted",
    "not connected to devtools",
    "chrome not reachable",
    "disconnected",
    "target crashed",
    "tab crashed",
    "no such window",
)

SCHEMES = ("http", "https", "file")
START_FAILURES_FATAL = 3  # consecutive failed browser starts in one worker abort the batch
# Where the tab really is (chrome-error://chromewebdata/ after a network error) and the document's status.
_LOCATION_JS = (
    "const e = performance.getEntriesByType('navigation')[0]; return [location.href, e ? e.responseStatus : 0];"
)
_NET_ERROR = re.compile(r'"errorCode":"(ERR_[A-Z_]+)"')  # in the data of Chromium's network error page
_SERIALS = itertools.count(1)
log = logging.getLogger(__name__)


class CaptureUnavailable(RuntimeError):
    """Chromium, chromedriver or Selenium is missing or cannot start; the message says how to install."""


@dataclass(frozen=True)
class CaptureOptions:
    """How a batch is captured; validated on creation."""

    concurrency: int = 1  # browsers in parallel, one thread each
    timeout: float = 30.0  # seconds a page may take to load (set_page_load_timeout) and become complete
    wait: float = 0.5  # settle seconds after readyState == 'complete', for scripts that fill the page late
    retries: int = 1  # extra attempts after a timeout, network error or HTTP 429/5xx
    backoff: float = 1.0  # seconds before the first retry; doubles with each further retry
    recycle_after: int = 50  # pages per browser before a fresh one (long sessions grow in memory)
    politeness: float = 1.0  # minimum seconds between two requests to the same host
    chromium: str = CHROMIUM
    chromedriver: str = CHROMEDRIVER

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.recycle_after < 1 or self.retries < 0:
            raise ValueError("concurrency and recycle_after must be >= 1, retries >= 0")
        if self.timeout <= 0 or min(self.wait, self.backoff, self.politeness) < 0:
            raise ValueError("timeout must be > 0; wait, backoff and politeness >= 0")


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


@dataclass
class CaptureSummary:
    """What capture_to_dir wrote: counts per status and every failed page with its reason."""

    out_dir: Path
    total: int = 0
    ok: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (index, url, reason)
    elapsed: float = 0.0  # wall-clock seconds for the batch

    @property
    def pages_per_s(self) -> float:
        return self.total / self.elapsed if self.elapsed > 0 else 0.0


@dataclass
class _Attempt:
    """The outcome of one load of one URL."""

    kind: str  # "ok", "timeout", "error" or "crash" (the browser died)
    html: str = ""
    final_url: str | None = None
    http_status: int | None = None
    error: str | None = None
    elapsed: float = 0.0
    browser: int = 0

    @property
    def retryable(self) -> bool:
        if self.kind == "ok":
            return self.http_status is not None and (self.http_status == 429 or self.http_status >= 500)
        return True


def check_available(chromium: str = CHROMIUM, chromedriver: str = CHROMEDRIVER) -> ModuleType:
    """Return selenium.webdriver, or raise CaptureUnavailable naming what is missing and how to install it."""
    missing = [p for p in (chromium, chromedriver) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        raise CaptureUnavailable(f"not found or not executable: {', '.join(missing)}; install with `{INSTALL_HINT}`")
    try:
        from selenium import webdriver
    except ImportError as exc:
        raise CaptureUnavailable("selenium is not installed; install with `pip install 'selenium>=4.15'`") from exc
    return webdriver


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


def capture_to_dir(urls: Iterable[str], out_dir: str | Path, **opts: Any) -> CaptureSummary:
    """Capture URLs into OUT_DIR/<index>.html (UTF-8) plus one JSON line per URL in OUT_DIR/capture.jsonl."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary, start = CaptureSummary(out_dir=out), time.monotonic()
    with open(out / "capture.jsonl", "w", encoding="utf-8") as jsonl:
        for page in capture(urls, **opts):
            jsonl.write(json.dumps(_record(page, _save(page, out)), ensure_ascii=False) + "\n")
            jsonl.flush()  # an interrupted batch keeps the lines of the pages it saved
            _count(summary, page)
    summary.elapsed = time.monotonic() - start
    return summary


def read_urls(source: str | Path) -> list[str]:
    """URLs from a file with one per line ('-' reads standard input); blank lines and '#' comments skipped."""
    text = sys.stdin.read() if str(source) == "-" else Path(source).read_text(encoding="utf-8")
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _save(page: CapturedPage, out: Path) -> str | None:
    """Write the page's HTML (when there is any) and return its file name."""
    if not page.html:
        return None
    name = f"{page.index}.html"
    (out / name).write_text(page.html, encoding="utf-8")
    return name


def _record(page: CapturedPage, file: str | None) -> dict[str, Any]:
    """The capture.jsonl line of one page."""
    keys = ("index", "url", "final_url", "status", "http_status", "attempts", "error")
    record = {k: getattr(page, k) for k in keys}
    return record | {"file": file, "elapsed": round(page.elapsed, 3)}


def _count(summary: CaptureSummary, page: CapturedPage) -> None:
    """Add one page to the summary."""
    summary.total += 1
    summary.by_status[page.status] = summary.by_status.get(page.status, 0) + 1
    if page.ok:
        summary.ok += 1
    else:
        summary.failed.append((page.index, page.url, f"{page.status}: {page.error}"))


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


class _Browser:
    """One Chromium under one chromedriver: started on first use, restarted when dead or worn out."""

    def __init__(self, opts: CaptureOptions) -> None:
        self.opts = opts
        self.driver: WebDriver | None = None
        self.profile: str | None = None  # fresh --user-data-dir, removed on close
        self.serial = 0
        self.pages = 0
        self.start_failures = 0

    def load(self, url: str) -> _Attempt:
        """Load one URL once; page and browser problems come back as the attempt's kind, never raised."""
        start = time.monotonic()
        try:
            attempt = self._load(url)
        except CaptureUnavailable:
            raise
        except Exception as exc:  # selenium, urllib3 (driver gone) and OS errors alike
            attempt = self._failed(exc)
        attempt.elapsed, attempt.browser = time.monotonic() - start, self.serial
        return attempt

    def _load(self, url: str) -> _Attempt:
        from selenium.common.exceptions import TimeoutException

        driver = self._ensure()
        self.pages += 1
        deadline = time.monotonic() + self.opts.timeout
        try:
            driver.get(url)
        except TimeoutException:
            return self._timed_out(driver)
        while driver.execute_script("return document.readyState") != "complete":
            if time.monotonic() > deadline:  # e.g. a script navigated to a page that never finishes
                return self._timed_out(driver)
            time.sleep(0.05)
        time.sleep(self.opts.wait)
        location, status = driver.execute_script(_LOCATION_JS)
        html = driver.page_source
        _close_popups(driver)
        if location.startswith("chrome-error:"):  # chromedriver raises for most network errors, not all
            code = _NET_ERROR.search(html)
            return _Attempt("error", error=f"net::{code.group(1) if code else 'unknown error page'}")
        return _Attempt("ok", html, driver.current_url, status or None)  # status 0: file: URL, cache

    def _timed_out(self, driver: WebDriver) -> _Attempt:
        """Stop the load and keep whatever had rendered."""
        attempt = _Attempt("timeout", error=f"page did not finish loading within {self.opts.timeout:g} s")
        with suppress(Exception):  # a renderer too busy to answer leaves the partial page empty
            driver.execute_script("window.stop();")
            attempt.html, attempt.final_url = driver.page_source, driver.current_url
        return attempt

    def _failed(self, exc: Exception) -> _Attempt:
        """Classify an exception; a dead browser is closed so the next load starts a fresh one."""
        if self.driver is None:
            log.warning("browser failed to start (%s)", _describe(exc))
            return _Attempt("crash", error=f"browser failed to start: {_describe(exc)}")
        if _is_dead(exc) or not self._alive():
            log.warning("browser %d died (%s); a fresh one takes the next load", self.serial, _describe(exc))
            self.close()
            return _Attempt("crash", error=f"browser died: {_describe(exc)}")
        return _Attempt("error", error=_describe(exc))

    def _alive(self) -> bool:
        """Whether the session still answers a trivial script."""
        try:
            return self.driver is not None and self.driver.execute_script("return 1") == 1
        except Exception:
            return False

    def _ensure(self) -> WebDriver:
        """The running driver, after recycling a worn one or starting a fresh one."""
        if self.driver is not None and self.pages >= self.opts.recycle_after:
            self.close()
        if self.driver is None:
            try:
                self.driver = self._start()
            except Exception as exc:
                self.start_failures += 1
                if self.start_failures >= START_FAILURES_FATAL:
                    msg = f"Chromium failed to start {self.start_failures} times: {_describe(exc)}"
                    raise CaptureUnavailable(f"{msg} (packages: `{INSTALL_HINT}`)") from exc
                raise
            self.start_failures, self.pages, self.serial = 0, 0, next(_SERIALS)
        return self.driver

    def _start(self) -> WebDriver:
        webdriver = check_available(self.opts.chromium, self.opts.chromedriver)
        self.profile = tempfile.mkdtemp(prefix="bodyblocks-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = self.opts.chromium
        options.unhandled_prompt_behavior = "dismiss"  # alert() and confirm() must not fail the page
        for flag in (*CHROMIUM_FLAGS, *QUIET_FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        # An explicit driver path makes Selenium skip Selenium Manager, which would otherwise download.
        service = webdriver.ChromeService(executable_path=self.opts.chromedriver)
        try:
            driver = webdriver.Chrome(options=options, service=service)
        except Exception:
            self._remove_profile()
            raise
        driver.set_page_load_timeout(self.opts.timeout)
        # Commands otherwise wait forever on a hung chromedriver; page loads end at the page timeout.
        driver.command_executor._client_config.timeout = self.opts.timeout + 30
        return driver

    def close(self) -> None:
        """Quit the browser (or kill what is left of it) and remove its profile."""
        driver, self.driver = self.driver, None
        if driver is not None:
            with suppress(Exception):  # quitting a dead session fails; its processes are killed below
                driver.quit()
            process = getattr(driver.service, "process", None)
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        self._remove_profile()

    def _remove_profile(self) -> None:
        if self.profile:
            _kill_profile_processes(self.profile)
            shutil.rmtree(self.profile, ignore_errors=True)
            if os.path.exists(self.profile):  # a file appeared while removing: one more pass
                time.sleep(0.2)
                shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None


def _close_popups(driver: WebDriver) -> None:
    """Close windows the page opened (chromedriver turns the popup blocker off), back on the first tab."""
    handles = driver.window_handles
    if len(handles) > 1:
        main = driver.current_window_handle
        for handle in handles:
            if handle != main:
                driver.switch_to.window(handle)
                driver.close()
        driver.switch_to.window(main)


def _is_dead(exc: Exception) -> bool:
    """Whether an exception means the browser session is gone."""
    from selenium.common.exceptions import InvalidSessionIdException, NoSuchWindowException, WebDriverException

    if isinstance(exc, InvalidSessionIdException | NoSuchWindowException):
        return True
    if not isinstance(exc, WebDriverException):  # urllib3 / OS errors: chromedriver unreachable
        return True
    message = (exc.msg or "").lower()
    return any(fragment in message for fragment in DEAD_SESSION)


def _describe(exc: BaseException) -> str:
    """A one-line reason for an exception (chromedriver messages carry a stack trace after the first line)."""
    msg = getattr(exc, "msg", None) or str(exc) or ""
    first = msg.strip().splitlines()[0].split("; For documentation")[0] if msg.strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


def _kill_profile_processes(profile: str) -> None:
    """Kill browser processes left with this profile (e.g. when chromedriver died) and wait until they are gone."""
    needle = f"--user-data-dir={profile}".encode()
    killed = []
    for proc in Path("/proc").glob("[0-9]*"):
        with suppress(OSError):
            if needle in (proc / "cmdline").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(proc)
    deadline = time.monotonic() + 5
    while killed and time.monotonic() < deadline:  # a dying process may still write into the profile
        killed = [proc for proc in killed if _running(proc)]
        time.sleep(0.05)


def _running(proc: Path) -> bool:
    """Whether a /proc entry is a live process (not gone, not a zombie)."""
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _fetch(browser: _Browser, index: int, url: str, throttle: _HostThrottle, stop: threading.Event) -> CapturedPage:
    """Capture one URL with retries: backoff after page failures, one free retry after a browser crash."""
    opts = browser.opts
    if urlsplit(url).scheme.lower() not in SCHEMES:
        return CapturedPage(index, url, None, "", "error", error=f"not an {'/'.join(SCHEMES)} URL", attempts=0)
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
