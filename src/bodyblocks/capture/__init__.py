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

The modules, each importing only those above it:
  settings.py  CaptureOptions, CaptureUnavailable and the default binary paths
  urls.py      reading URL lists; the schemes a browser may load
  chromium.py  check_available (the lazy Selenium import), Chromium's flags, killing a dead browser's processes
  browser.py   one browser: load a page once (stages 2-4), classify failures, restart and recycle Chromium
  fetch.py     one URL: politeness (1), retries (5), and the CapturedPage it ends as
  workers.py   capture(): the feeder and worker threads, results handed back in input order
  output.py    capture_to_dir(): <index>.html files and capture.jsonl
Names with a leading underscore are shared between these modules but are not the package's API.
"""

from bodyblocks.capture.browser import DEAD_SESSION, START_FAILURES_FATAL, log
from bodyblocks.capture.chromium import CHROMIUM_FLAGS, QUIET_FLAGS, check_available
from bodyblocks.capture.fetch import CapturedPage
from bodyblocks.capture.output import CaptureSummary, capture_to_dir
from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM, INSTALL_HINT, CaptureOptions, CaptureUnavailable
from bodyblocks.capture.urls import SCHEMES, read_urls
from bodyblocks.capture.workers import capture

__all__ = [
    "CHROMEDRIVER",
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "DEAD_SESSION",
    "INSTALL_HINT",
    "QUIET_FLAGS",
    "SCHEMES",
    "START_FAILURES_FATAL",
    "CaptureOptions",
    "CaptureSummary",
    "CaptureUnavailable",
    "CapturedPage",
    "capture",
    "capture_to_dir",
    "check_available",
    "log",
    "read_urls",
]
