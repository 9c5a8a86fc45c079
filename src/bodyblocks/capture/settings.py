"""What a capture batch is asked to do, and the error raised when it cannot be done at all.

Everything else in the package reads its settings from one validated CaptureOptions; the binary paths are
Debian's packages, because ``INSTALL_HINT`` is what the error messages tell the user to install.
"""

from __future__ import annotations

from dataclasses import dataclass

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL_HINT = "apt-get install chromium chromium-driver"


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
