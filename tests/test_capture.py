"""Headless capture against a local HTTP server: scripts, redirects, errors, hangs, crashes, retries."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bodyblocks.capture import (
    INSTALL_HINT,
    CapturedPage,
    CaptureOptions,
    CaptureUnavailable,
    capture,
    check_available,
    read_urls,
)
from bodyblocks.capture.browser import _Attempt, _Browser
from bodyblocks.capture.fetch import _fetch, _HostThrottle
from bodyblocks.cli import main


def _browser_missing() -> str | None:
    try:
        check_available()
    except CaptureUnavailable as exc:
        return str(exc)
    return None


_MISSING = _browser_missing()
browser = [  # every browser test starts Chromium at least once: seconds, hence also `slow`
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(_MISSING is not None, reason=f"needs Debian's chromium and chromium-driver: {_MISSING}"),
]


def browser_test(test: Callable[..., None]) -> Callable[..., None]:
    """Apply the browser marks to one test function."""
    for mark in browser:
        test = mark(test)
    return test


JS_PAGE = """<html><head><title>js</title></head><body><p>Shell paragraph.</p>
<script>setTimeout(function () {
  for (const text of ["Inserted paragraph one.", "Inserted paragraph two."]) {
    const p = document.createElement("p"); p.textContent = text; document.body.appendChild(p);
  }
}, 250);</script></body></html>"""


DIALOG_PAGE = """<html><body><p>Before the dialog.</p><script>window.open("/static/popup");
alert("hello"); document.body.insertAdjacentHTML("beforeend", "<p>After the dialog.</p>");</script></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    """Routes: /static/NAME, /js, /dialog, /redirect, /missing, /hang (an image that stalls), /flaky/KEY (503 once),
    /spin and /late-spin (a script looping forever, before or after the load)."""

    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        return

    def do_GET(self) -> None:
        path = self.path
        if path.startswith("/static/"):
            self._send(200, f"<html><body><p>static {path[8:]}</p></body></html>")
        elif path == "/js":
            self._send(200, JS_PAGE)
        elif path == "/dialog":
            self._send(200, DIALOG_PAGE)
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/static/target")
            self.end_headers()
        elif path == "/missing":
            self._send(404, "<html><body><p>no such page</p></body></html>")
        elif path == "/hang":
            self._send(200, "<html><body><p>partial body</p><img src='/stall'></body></html>")
        elif path == "/spin":  # the renderer never returns from a script
            self._send(200, "<html><body><p>spinning</p><script>while (true) {}</script></body></html>")
        elif path == "/late-spin":  # loads, then spins: the scripts that read the page get no answer
            self._send(200, "<html><body><p>late</p><script>setTimeout(() => { while (true) {} }, 10);</script>"
                            "</body></html>")
        elif path == "/stall":
            self.server.release.wait(30)  # never answers within any test's timeout
        elif path.startswith("/flaky/"):
            seen = self.server.hits.setdefault(path, 0)
            self.server.hits[path] = seen + 1
            self._send(503 if seen == 0 else 200, f"<html><body><p>flaky try {seen + 1}</p></body></html>")
        else:
            self._send(404, "unknown route")

    def _send(self, status: int, html: str) -> None:
        body = html.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.release = threading.Event()
        self.hits: dict[str, int] = {}
        self.base = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAST = {"timeout": 10.0, "wait": 0.1, "retries": 0, "politeness": 0.0}


@pytest.fixture(scope="module")
def batch(server: _Server) -> dict[str, CapturedPage]:
    """One capture of the simple cases, with Selenium Manager booby-trapped (it must never run)."""
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    calls: list[object] = []

    def trap(self: object, args: list[str]) -> dict[str, str]:
        calls.append(args)
        raise AssertionError("Selenium Manager was asked for a driver")

    urls = {
        "js": f"{server.base}/js",
        "redirect": f"{server.base}/redirect",
        "missing": f"{server.base}/missing",
        "flaky": f"{server.base}/flaky/batch",
        "dialog": f"{server.base}/dialog",
        "refused": f"http://127.0.0.1:{_closed_port()}/",
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SeleniumManager, "binary_paths", trap)
        pages = list(capture(urls.values(), timeout=10, wait=0.75, retries=1, backoff=0.1, politeness=0))
    assert not calls
    assert [p.index for p in pages] == list(range(len(urls)))
    return dict(zip(urls, pages, strict=True))


class TestBatch:
    pytestmark = browser

    def test_script_inserted_paragraphs_are_captured(self, batch: dict[str, CapturedPage], server: _Server) -> None:
        page = batch["js"]
        assert page.status == "ok" and page.http_status == 200 and page.error is None
        assert "Inserted paragraph one." in page.html and "Inserted paragraph two." in page.html
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        plain = opener.open(f"{server.base}/js", timeout=10).read().decode("utf-8")
        assert "Shell paragraph." in plain and "<p>Inserted paragraph one.</p>" not in plain

    def test_redirect_records_final_url(self, batch: dict[str, CapturedPage], server: _Server) -> None:
        page = batch["redirect"]
        assert page.url == f"{server.base}/redirect"
        assert page.final_url == f"{server.base}/static/target"
        assert page.ok and "static target" in page.html

    def test_http_404_is_recorded(self, batch: dict[str, CapturedPage]) -> None:
        page = batch["missing"]
        assert (page.status, page.http_status, page.error) == ("http-error", 404, "HTTP 404")
        assert "no such page" in page.html and page.attempts == 1  # a 404 is an answer: no retry

    def test_server_error_is_retried(self, batch: dict[str, CapturedPage]) -> None:
        page = batch["flaky"]
        assert page.ok and page.attempts == 2 and "flaky try 2" in page.html

    def test_dialogs_and_popups_do_not_fail_the_page(self, batch: dict[str, CapturedPage]) -> None:
        page = batch["dialog"]
        assert page.ok and "After the dialog." in page.html and "static popup" not in page.html

    def test_network_error_after_retries(self, batch: dict[str, CapturedPage]) -> None:
        page = batch["refused"]
        assert page.status == "error" and "ERR_CONNECTION_REFUSED" in (page.error or "")
        assert page.attempts == 2 and page.html == ""


@browser_test
def test_never_finishing_page_times_out_and_batch_goes_on(server: _Server) -> None:
    start = time.monotonic()
    hang, after = capture([f"{server.base}/hang", f"{server.base}/static/after"], **(FAST | {"timeout": 2.0}))
    assert hang.status == "timeout" and "2 s" in (hang.error or "")
    assert "partial body" in hang.html  # what had rendered is kept
    assert after.ok and "static after" in after.html
    assert time.monotonic() - start < 20


@browser_test
def test_spinning_page_does_not_time_out_the_urls_after_it(server: _Server) -> None:
    start = time.monotonic()
    urls = [f"{server.base}/static/s0", f"{server.base}/spin", f"{server.base}/late-spin",
            f"{server.base}/static/s1", f"{server.base}/static/s2"]
    pages = list(capture(urls, **(FAST | {"timeout": 2.0})))
    assert [p.status for p in pages] == ["ok", "timeout", "timeout", "ok", "ok"]
    assert "static s2" in pages[-1].html
    assert pages[0].browser != pages[2].browser != pages[3].browser  # a fresh browser after each spinning page
    assert time.monotonic() - start < 60  # measured 5 s a spinning page, 13 s a late one


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the processes whose parent is `pid`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if int(rest[1]) == pid:
            found.append((int(proc.name), name))
    return found


@browser_test
def test_killed_browser_is_replaced_and_batch_recovers(server: _Server) -> None:
    urls = [f"{server.base}/static/k{i}" for i in range(4)]
    pages = []
    for page in capture(urls, **(FAST | {"wait": 0.3, "retries": 1})):
        pages.append(page)
        if page.index == 0:
            drivers = [pid for pid, name in _children(os.getpid()) if name == "chromedriver"]
            assert len(drivers) == 1
            browsers = [pid for pid, name in _children(drivers[0]) if name == "chromium"]
            assert len(browsers) == 1
            os.kill(browsers[0], signal.SIGKILL)
    assert [p.status for p in pages] == ["ok"] * 4
    assert [f"static k{i}" in p.html for i, p in enumerate(pages)] == [True] * 4
    assert pages[-1].browser != pages[0].browser  # a fresh browser finished the batch
    assert sum(p.attempts for p in pages) == 5  # exactly one page was caught by the crash and retried


@browser_test
def test_browser_is_recycled_and_its_profile_removed(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # browser profiles go here
    urls = [f"{server.base}/static/r{i}" for i in range(3)]
    pages = list(capture(urls, **(FAST | {"recycle_after": 2})))
    assert all(p.ok and f"static r{i}" in p.html for i, p in enumerate(pages))
    first, second, third = (p.browser for p in pages)
    assert first == second != third  # a fresh browser after two pages
    assert not list(tmp_path.glob("bodyblocks-chromium-*"))  # every profile was removed


@browser_test
def test_cli_capture_in_parallel_writes_files_and_log(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = f"# test list\n{server.base}/js\n\n{server.base}/missing\n{server.base}/static/c\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(listing))
    out = tmp_path / "out"
    argv = ["capture", "-", "--out", str(out), "--concurrency", "2", "--wait", "0.75", "--retries", "0",
            "--politeness", "0"]
    assert main(argv) == 1  # the 404 counts as a failure
    lines = [json.loads(line) for line in (out / "capture.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["url"] for r in lines] == [  # input order, though two browsers shared the work
        f"{server.base}/js", f"{server.base}/missing", f"{server.base}/static/c"]
    assert [r["status"] for r in lines] == ["ok", "http-error", "ok"]
    assert set(lines[0]) >= {"url", "final_url", "file", "status", "elapsed", "error"}
    assert lines[0]["file"] == "0.html" and lines[0]["error"] is None and lines[0]["elapsed"] > 0
    assert "Inserted paragraph two." in (out / "0.html").read_text(encoding="utf-8")
    assert lines[1]["error"] == "HTTP 404"


# ---------------------------------------------------------------------------------------- no browser needed
def test_missing_binaries_raise_with_install_command(tmp_path: Path) -> None:
    with pytest.raises(CaptureUnavailable, match="apt-get install chromium chromium-driver"):
        capture(["http://127.0.0.1/"], chromium=str(tmp_path / "no-chromium"))
    assert INSTALL_HINT == "apt-get install chromium chromium-driver"


def test_cli_reports_missing_browser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.1/\n", encoding="utf-8")
    argv = ["capture", str(urls), "--out", str(tmp_path / "o"), "--chromedriver", str(tmp_path / "none")]
    assert main(argv) == 2
    assert "apt-get install chromium chromium-driver" in capsys.readouterr().err


def test_read_urls_skips_blanks_and_comments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listing = "# header\nhttp://a.example/\n\n   \n  https://b.example/x  \n#http://c.example/\n"
    path = tmp_path / "urls.txt"
    path.write_text(listing, encoding="utf-8")
    assert read_urls(path) == ["http://a.example/", "https://b.example/x"]
    monkeypatch.setattr("sys.stdin", io.StringIO(listing))
    assert read_urls("-") == ["http://a.example/", "https://b.example/x"]


@pytest.mark.parametrize("bad", [{"concurrency": 0}, {"timeout": 0}, {"retries": -1}, {"politeness": -1}])
def test_options_are_validated(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        CaptureOptions(**bad)  # type: ignore[arg-type]


def test_politeness_spaces_requests_per_host() -> None:
    throttle, stop = _HostThrottle(0.2), threading.Event()
    start = time.monotonic()
    for _ in range(3):
        throttle.wait("http://a.example/page", stop)
    same_host = time.monotonic() - start
    throttle.wait("http://b.example/page", stop)  # another host has its own slots
    assert 0.4 <= same_host < 1.5 and time.monotonic() - start - same_host < 0.1


class _ScriptedBrowser:
    """Stands in for _Browser: returns the given attempts in turn."""

    def __init__(self, attempts: list[_Attempt], retries: int) -> None:
        self.opts = CaptureOptions(retries=retries, backoff=0.01, politeness=0)
        self.attempts = attempts
        self.loads = 0

    def load(self, url: str) -> _Attempt:
        self.loads += 1
        return self.attempts.pop(0)


def _run_fetch(attempts: list[_Attempt], retries: int) -> tuple[CapturedPage, int]:
    fake = _ScriptedBrowser(attempts, retries)
    page = _fetch(fake, 3, "http://a.example/", _HostThrottle(0), threading.Event())  # type: ignore[arg-type]
    return page, fake.loads


def test_retry_policy() -> None:
    ok = _Attempt("ok", "<p>x</p>", "http://a.example/", 200)
    page, loads = _run_fetch([_Attempt("timeout"), _Attempt("timeout"), ok], retries=1)
    assert (page.status, page.attempts, loads) == ("timeout", 2, 2)
    page, loads = _run_fetch([_Attempt("crash", error="gone"), ok], retries=0)  # a crash gets one free retry
    assert (page.status, page.attempts, page.index) == ("ok", 2, 3)
    dead = _Attempt("crash", error="browser died: gone")
    page, loads = _run_fetch([dead, dead, ok], retries=0)  # ...but only one
    assert (page.status, page.error, loads) == ("error", "browser died: gone", 2)
    page, loads = _run_fetch([_Attempt("ok", "", None, 429), ok], retries=1)
    assert (page.status, loads) == ("ok", 2)
    page, loads = _run_fetch([_Attempt("ok", "<p>gone</p>", "http://a.example/", 410), ok], retries=3)
    assert (page.status, page.http_status, loads) == ("http-error", 410, 1)


def test_non_web_urls_are_rejected_without_a_browser() -> None:
    page = _fetch(_Browser(CaptureOptions()), 0, "ftp://a.example/f", _HostThrottle(0), threading.Event())
    assert (page.status, page.attempts, page.html) == ("error", 0, "")
    assert page.to_page().url == "ftp://a.example/f"
