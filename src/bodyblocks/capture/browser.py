"""One live browser: loading a page once, classifying what went wrong, and restarting or recycling Chromium.

A load
  1. starts Chromium when there is none (or when the current one has served ``recycle_after`` pages),
  2. loads the page under a page-load timeout (a page that never finishes is an attempt of kind "timeout";
     when its renderer is too busy to stop, e.g. a script spinning forever, the browser is closed so that the
     next URL starts a fresh one),
  3. waits for ``document.readyState == 'complete'`` plus a settle time for late scripts,
  4. reads ``page_source``, the final URL and the HTTP status of the main document.
Nothing is raised for a page or a dead browser: the attempt's kind says what happened ("crash" means the
browser is gone and the next load starts a fresh one). Only CaptureUnavailable escapes, once Chromium has
failed to start START_FAILURES_FATAL times in a row. Retrying is the caller's business (fetch.py).
"""

from __future__ import annotations

import itertools
import logging
import re
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bodyblocks.capture.chromium import (
    _chrome_options,
    _chrome_service,
    _remove_profile,
    _set_timeouts,
    check_available,
)
from bodyblocks.capture.settings import INSTALL_HINT, CaptureOptions, CaptureUnavailable

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

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

# Seconds a timed-out page's renderer has to stop loading and hand over its DOM. Measured with a page running
# `while(true){}`: every chromedriver command (window.stop, page_source, CDP Page.stopLoading and
# Runtime.terminateExecution, a new tab) then waits for the renderer until the page-load timeout and fails, and
# the next URL, loaded in the same tab and renderer, times out unrequested; only a fresh browser recovers.
SALVAGE_S = 2.0
START_FAILURES_FATAL = 3  # consecutive failed browser starts in one worker abort the batch
# Where the tab really is (chrome-error://chromewebdata/ after a network error) and the document's status.
_LOCATION_JS = (
    "const e = performance.getEntriesByType('navigation')[0]; return [location.href, e ? e.responseStatus : 0];"
)
_NET_ERROR = re.compile(r'"errorCode":"(ERR_[A-Z_]+)"')  # in the data of Chromium's network error page
_SERIALS = itertools.count(1)  # shared by all workers: a browser's serial is unique within the process
log = logging.getLogger("bodyblocks.capture")  # the package's one logger, named as before the split


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
            while driver.execute_script("return document.readyState") != "complete":
                if time.monotonic() > deadline:  # e.g. a script navigated to a page that never finishes
                    return self._timed_out(driver)
                time.sleep(0.05)
            time.sleep(self.opts.wait)
            location, status = driver.execute_script(_LOCATION_JS)
            html = driver.page_source
            _close_popups(driver)
        except TimeoutException:  # the load, or a script the renderer is too busy to run (chromedriver waits
            return self._timed_out(driver)  # the page-load timeout for the renderer's answer, then gives up)
        if location.startswith("chrome-error:"):  # chromedriver raises for most network errors, not all
            code = _NET_ERROR.search(html)
            return _Attempt("error", error=f"net::{code.group(1) if code else 'unknown error page'}")
        return _Attempt("ok", html, driver.current_url, status or None)  # status 0: file: URL, cache

    def _timed_out(self, driver: WebDriver) -> _Attempt:
        """Stop the load and keep whatever had rendered; a renderer that cannot stop (a script spinning in a
        loop) takes the browser down with it, so that the next URL gets a fresh browser and its own chance."""
        attempt = _Attempt("timeout", error=f"page did not finish loading within {self.opts.timeout:g} s")
        try:  # chromedriver waits up to the page-load timeout for the renderer: shortened for this salvage
            _set_timeouts(driver, min(SALVAGE_S, self.opts.timeout))
            driver.execute_script("window.stop();")
            attempt.html, attempt.final_url = driver.page_source, driver.current_url
            _set_timeouts(driver, self.opts.timeout)
        except Exception as exc:  # noqa: BLE001 - whatever failed, this browser is not trusted with another page
            self._abandon(f"a timed-out page's renderer does not answer ({_describe(exc)})")
        return attempt

    def _abandon(self, why: str) -> None:
        """Kill a browser stuck on a busy renderer (quitting it would wait on the renderer too)."""
        log.warning("browser %d: %s; a fresh browser takes the next load", self.serial, why)
        self.close(graceful=False)

    def _failed(self, exc: Exception) -> _Attempt:
        """Classify an exception; a dead browser is closed so the next load starts a fresh one."""
        from urllib3.exceptions import ReadTimeoutError

        if self.driver is None:
            log.warning("browser failed to start (%s)", _describe(exc))
            return _Attempt("crash", error=f"browser failed to start: {_describe(exc)}")
        if isinstance(exc, ReadTimeoutError):  # chromedriver itself waits on a renderer that runs a script forever
            self._abandon(f"chromedriver did not answer ({_describe(exc)})")
            return _Attempt("timeout", error=f"page did not finish loading within {self.opts.timeout:g} s (the "
                                             "browser stopped answering: a script keeps the page busy)")
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
        """A fresh Chromium with a fresh profile; the profile goes again when the start fails."""
        webdriver = check_available(self.opts.chromium, self.opts.chromedriver)
        self.profile = tempfile.mkdtemp(prefix="bodyblocks-chromium-")
        options = _chrome_options(webdriver, self.opts, self.profile)
        service = _chrome_service(webdriver, self.opts)
        try:
            driver = webdriver.Chrome(options=options, service=service)
        except Exception:
            self._remove_profile()
            raise
        _set_timeouts(driver, self.opts.timeout)
        return driver

    def close(self, graceful: bool = True) -> None:
        """Quit the browser (or kill it, or what is left of it) and remove its profile."""
        driver, self.driver = self.driver, None
        if driver is not None and graceful:
            with suppress(Exception):  # quitting a dead session fails; its processes are killed below
                driver.quit()
        if driver is not None:
            process = getattr(driver.service, "process", None)
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        self._remove_profile()

    def _remove_profile(self) -> None:
        if self.profile:
            _remove_profile(self.profile)
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
