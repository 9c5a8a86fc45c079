"""The annotation server against hostile clients and pages: slow requests, framing, script URLs in the render."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from lxml import html as lxml_html

from bodyblocks.annotate import server as server_module
from bodyblocks.annotate.server import TOKEN_HEADER, Annotator, make_server, make_view
from bodyblocks.annotate.store import AnnotationStore

PAGE = ("<!doctype html><html><head><title>Harbour news</title></head><body><h1>The river is open again</h1>"
        "<p>Ships pass the locks again after a week of floods, the authority said on Monday.</p></body></html>")


def _dataset(root: Path, html: str = PAGE) -> Path:
    (root / "html").mkdir(parents=True)
    (root / "html" / "a.html.gz").write_bytes(gzip.compress(html.encode("utf-8")))
    rec = {"id": "a", "url": "http://a.example/", "lang": "en", "split": None, "html": "html/a.html.gz",
           "gold": None, "snippets": None, "page_type": None, "labels": None, "note": None}
    (root / "pages.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def slow_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int, str]]:
    monkeypatch.setattr(server_module, "CLIENT_TIMEOUT_S", 5.0)  # longer than the trickle's pauses
    monkeypatch.setattr(server_module, "REQUEST_DEADLINE_S", 1.5)
    monkeypatch.setattr(server_module, "MAX_CLIENTS", 3)
    app = Annotator(AnnotationStore(_dataset(tmp_path / "ds")), extractor=None)
    server = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[0], server.server_address[1], app.token
    server.shutdown()
    server.server_close()


def _trickle(sock: socket.socket, data: bytes, stop: threading.Event) -> None:
    """A byte every 0.3 s (well inside the per-read timeout), until the server hangs up."""
    for byte in data:
        if stop.is_set():
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return
        time.sleep(0.3)


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server hangs up on `sock` within that many seconds (whatever it answers before)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:  # reset
        pass
    return True


def test_clients_trickling_requests_cannot_hold_every_slot(slow_server: tuple[str, int, str]) -> None:
    host, port, token = slow_server
    get = f"GET /api/pages HTTP/1.1\r\nHost: {host}:{port}\r\nX-Padding: {'x' * 200}\r\n\r\n".encode()
    post = (f"POST /api/page/a HTTP/1.1\r\nHost: {host}:{port}\r\n{TOKEN_HEADER}: {token}\r\n"
            "Content-Length: 500\r\n\r\n").encode()
    stop = threading.Event()
    slow = [socket.create_connection((host, port), timeout=10) for _ in range(3)]
    slow[2].sendall(post)  # its headers at once, its body a byte at a time
    for s, data in zip(slow, (get, get, b"{" * 500), strict=True):
        threading.Thread(target=_trickle, args=(s, data, stop), daemon=True).start()
    try:
        time.sleep(0.5)
        with socket.create_connection((host, port), timeout=5) as extra:  # every slot held: 503
            assert extra.recv(100).startswith(b"HTTP/1.1 503")
        started = time.monotonic()
        # dropped at the request's deadline (1.5 s), though no read waits 5 s: the trickle would last a minute
        assert all(_closed_by_server(s, 6.0) for s in slow)
        assert time.monotonic() - started < 4.0
        with urllib.request.urlopen(f"http://{host}:{port}/api/pages", timeout=5) as resp:
            assert resp.status == 200  # served again
    finally:
        stop.set()
        for s in slow:
            s.close()


def test_a_request_sent_in_time_is_served_on_a_kept_alive_connection(slow_server: tuple[str, int, str]) -> None:
    host, port, _ = slow_server
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        for _ in range(3):  # the deadline is each request's, not the connection's: 3 s in all
            conn.request("GET", "/api/pages")
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["pages"]
            time.sleep(1.0)
    finally:
        conn.close()


def _served(tmp_path: Path, html: str = PAGE) -> tuple[str, server_module._Server]:
    server = make_server(Annotator(AnnotationStore(_dataset(tmp_path / "ds", html)), extractor=None), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def test_no_response_can_be_framed_by_another_site(tmp_path: Path) -> None:
    base, server = _served(tmp_path)
    try:
        for path in ("/", "/api/pages", "/api/page/a", "/nothing"):
            try:
                resp = urllib.request.urlopen(base + path, timeout=10)
            except urllib.error.HTTPError as exc:
                resp = exc
            assert resp.headers["X-Frame-Options"] == "DENY", path
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"], path
        with urllib.request.urlopen(base + "/render/a", timeout=10) as resp:  # the labelling page's side pane
            assert resp.headers["X-Frame-Options"] == "SAMEORIGIN"
            assert "frame-ancestors 'self'" in resp.headers["Content-Security-Policy"]
    finally:
        server.shutdown()
        server.server_close()


SCRIPTED = """<html><body><p>An article paragraph long enough to be a block of the page, with a link
<a href="javascript:alert(1)">here</a> and <a href=" JaVa&#x09;ScRiPt:alert(2)">there</a>.</p>
<svg><a xlink:href="javascript:alert(3)"><text>svg link</text></a>
<animate attributeName="href" values="#;javascript:alert(4)"/><set attributeName="href" to="javascript:alert(5)"/>
<animate attributeName="href" from="javascript:alert(6)" to="#x"/><use href="vbscript:msgbox(7)"/></svg>
<math><mi xlink:href="javascript:alert(8)">x</mi>
<maction actiontype="statusline" href="javascript:alert(9)">y</maction></math>
<img src=x data-src="javascript:alert(10)">
<div title="javascript:alert(11)" data-x="&#106;avascript:alert(12)">A div.</div>
<p>The last paragraph of the article, also long enough to be a block of its own.</p></body></html>"""


def test_the_render_strips_script_urls_from_every_attribute_of_every_element() -> None:
    view = make_view("x", SCRIPTED, None, None)
    render = view.render.decode("utf-8")
    assert "script:" not in unquote("".join(render.lower().split())), render
    root = lxml_html.fromstring(view.render)
    values = [v for el in root.iter() if isinstance(el.tag, str) for v in el.attrib.values()]
    assert not any("script:" in unquote("".join(v.split())).lower() for v in values)
    assert "An article paragraph" in render and "svg link" in render and 'data-bb="' in render
    assert "#x" in render  # values without a script URL stay
