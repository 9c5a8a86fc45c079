"""Chromium and chromedriver themselves: checking they exist, the flags a browser starts with, and cleaning up.

Selenium is imported here, in check_available, and nowhere at module level: importing bodyblocks.capture
must stay cheap and must work without Selenium installed. The driver path is always given explicitly, so
Selenium Manager is never consulted and nothing is downloaded. A browser whose chromedriver died leaves
Chromium processes writing into its profile folder; _remove_profile kills them by their --user-data-dir
before deleting the folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from contextlib import suppress
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM, INSTALL_HINT, CaptureOptions, CaptureUnavailable
from bodyblocks.runtime.extras import install_command

if TYPE_CHECKING:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.remote.webdriver import WebDriver

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


def check_available(chromium: str = CHROMIUM, chromedriver: str = CHROMEDRIVER) -> ModuleType:
    """Return selenium.webdriver, or raise CaptureUnavailable naming what is missing and how to install it."""
    missing = [p for p in (chromium, chromedriver) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        raise CaptureUnavailable(f"not found or not executable: {', '.join(missing)}; install with `{INSTALL_HINT}`")
    try:
        from selenium import webdriver
    except ImportError as exc:
        raise CaptureUnavailable("capture needs selenium, which is not installed "
                                 f"({install_command('capture')})") from exc
    return webdriver


def _chrome_options(webdriver: ModuleType, opts: CaptureOptions, profile: str) -> Options:
    """The ChromeOptions of one browser with its own fresh profile folder."""
    options = webdriver.ChromeOptions()
    options.binary_location = opts.chromium
    options.unhandled_prompt_behavior = "dismiss"  # alert() and confirm() must not fail the page
    for flag in (*CHROMIUM_FLAGS, *QUIET_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return options


def _chrome_service(webdriver: ModuleType, opts: CaptureOptions) -> Service:
    """The chromedriver service, by explicit path."""
    # An explicit driver path makes Selenium skip Selenium Manager, which would otherwise download.
    return webdriver.ChromeService(executable_path=opts.chromedriver)


COMMAND_SLACK = 10.0  # seconds a chromedriver command may take beyond the page-load timeout before it is given up


def _set_timeouts(driver: WebDriver, timeout: float) -> None:
    """Bound page loads by the page timeout and every other command a little above it, without retries.

    chromedriver waits without end for a renderer whose page runs a script in an endless loop right after loading
    (measured: `get` never returned); only the HTTP read timeout of the command gives up then. urllib3 would
    resend an idempotent command (page_source, quit) three times after a read timeout, four waits in all, so
    read retries are switched off; connection retries stay.
    """
    from urllib3.util.retry import Retry

    driver.set_page_load_timeout(timeout)
    executor = driver.command_executor
    executor._client_config.timeout = timeout + COMMAND_SLACK
    conn = getattr(executor, "_conn", None)  # the keep-alive pool (chromedriver sessions keep connections alive)
    if conn is not None and not isinstance(conn.connection_pool_kw.get("retries"), Retry):
        conn.connection_pool_kw["retries"] = Retry(total=3, read=False)  # read errors raised as they are
        conn.clear()  # pools made before take the new retries when made again


def _remove_profile(profile: str) -> None:
    """Kill what still runs with this profile, then delete the folder."""
    _kill_profile_processes(profile)
    shutil.rmtree(profile, ignore_errors=True)
    if os.path.exists(profile):  # a file appeared while removing: one more pass
        time.sleep(0.2)
        shutil.rmtree(profile, ignore_errors=True)


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
