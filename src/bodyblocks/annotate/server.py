"""`bodyblocks annotate`: a local web page for labelling a dataset's blocks (the standard library's HTTP server).

Routes (JSON unless said otherwise):
    GET  /                      the labelling page (ui.py), with this run's write token in it
    GET  /api/pages             the dataset's pages: id, labelled, done, kind; and the next page to do
    GET  /api/page/<id>         one page: its blocks in reading order (text, tag path, key, P(body) of the model),
                                the stored labels (else the model's kept blocks as the starting labels), kind, note
    GET  /render/<id>           the page itself, scripts and external loads removed, each block's element
                                marked with data-bb="i j ..." (the labelling page highlights them)
    POST /api/page/<id>         {"labels": [0/1 per block], "blocks": n, "done": bool, "kind": ..., "note": ...};
                                needs the header X-Bodyblocks-Token: the token of this run

Only the pages the dataset lists can be asked for (an id is looked up, never used as a path); requests whose
Host is not this server's address are refused (DNS rebinding); bodies are capped at MAX_BODY bytes; a client
that stalls is dropped after CLIENT_TIMEOUT_S, one that has not sent a whole request (headers and body) within
REQUEST_DEADLINE_S of starting it is dropped however it trickles, and no more than MAX_CLIENTS are served at once.
No response may be framed by another site (X-Frame-Options, CSP frame-ancestors): the labelling page by none,
the render only by the labelling page.
"""

from __future__ import annotations

import io
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from bodyblocks.annotate.store import KEEP, KINDS, AnnotationError, AnnotationStore, apply_labels, block_keys
from bodyblocks.errors import InputError
from bodyblocks.types import Block

TOKEN_HEADER = "X-Bodyblocks-Token"
MAX_BODY = 8 * 1024 * 1024  # a POST larger than this is refused (a page's labels are a few KB)
CACHED_PAGES = 8  # segmented pages kept in memory
# a client that sends nothing for this long is let go, and at most MAX_CLIENTS are served at once (a thread each):
# a connection beyond that is answered 503 and closed, so stalled clients cannot pile up threads
CLIENT_TIMEOUT_S = 30.0
MAX_CLIENTS = 32
# a whole request, its headers and body, read within this long of its first byte being awaited (a client that
# sends a byte every few seconds meets no per-read timeout, and 32 of them held every slot)
REQUEST_DEADLINE_S = 10.0
_DROP_TAGS = ("script", "noscript", "iframe", "frame", "frameset", "object", "embed", "base", "link", "meta",
              "applet", "template", "input", "select", "textarea")  # controls would take the label keys
_UNWRAP_TAGS = ("form", "button")  # kept as their content
RENDER_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
              "frame-ancestors 'self'; form-action 'none'")
INDEX_CSP = ("default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-src 'self'; "
             "img-src 'self' data:; frame-ancestors 'none'; form-action 'none'")
DATA_CSP = "default-src 'none'; frame-ancestors 'none'"  # JSON and errors: nothing to load, nothing to frame
# an attribute value that runs script wherever it ends up (href, xlink:href, <animate values/from/to>, ...), once
# percent-escapes are undone (the serializer escapes a URL's tab) and the whitespace and control characters a
# browser skips in a URL are taken out
_SCRIPT_URL = re.compile(r"(?:java|vb)script:", re.IGNORECASE)
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]+")


@dataclass
class PageView:
    """A page as the labelling page shows it: its blocks, the model's P(body) and kept blocks, its render."""

    id: str
    url: str | None
    title: str
    blocks: list[Block]
    probabilities: list[float]
    kept: list[int]
    render: bytes  # the page's HTML for the side pane


class Annotator:
    """What the HTTP handler calls: the store, the model's starting labels, pages cached as segmented."""

    def __init__(self, store: AnnotationStore, extractor: Any = None) -> None:
        """`extractor`: a block extractor whose P(body) and kept blocks start each page (None: all 0)."""
        self.store = store
        self.extractor = extractor
        self.token = secrets.token_urlsafe(24)
        self._lock = threading.Lock()
        self._views: OrderedDict[str, PageView] = OrderedDict()

    # ------------------------------------------------------------------------------------ page views
    def view(self, page_id: str) -> PageView:
        with self._lock:
            if page_id in self._views:
                self._views.move_to_end(page_id)
                return self._views[page_id]
        page = self.store.page(page_id)
        view = make_view(page_id, page.html, page.url, self.extractor)
        with self._lock:
            self._views[page_id] = view
            while len(self._views) > CACHED_PAGES:
                self._views.popitem(last=False)
        return view

    def page_json(self, page_id: str) -> dict[str, Any]:
        view = self.view(page_id)
        ann = self.store.load(page_id)
        kept = set(view.kept)
        model_labels = [int(i in kept) for i in range(len(view.blocks))]
        check = None
        if ann is not None:
            labels, fit = apply_labels(view.blocks, ann)
            check = {"labelled": fit.labelled, "blocks": fit.blocks, "changed": fit.changed, "missing": fit.missing}
            if fit.missing == len(view.blocks) and view.blocks:  # nothing fits any more: start from the model
                labels = model_labels
        else:
            labels = model_labels
        keys = block_keys(view.blocks)
        return {
            "id": page_id, "url": view.url, "title": view.title, "dataset": self.store.dataset.name,
            "labelled": ann is not None, "done": bool(ann and ann.done), "kind": ann.kind if ann else None,
            "note": ann.note if ann else "", "updated": ann.updated if ann else "", "check": check,
            "kinds": list(KINDS),
            "blocks": [
                {"i": b.index, "key": k, "tag": b.tag, "path": b.tag_path, "depth": b.depth, "text": b.text,
                 "heading": b.heading_level, "link_density": round(b.link_density, 3),
                 "p": round(p, 4), "model": y, "label": lab}
                for b, k, p, y, lab in zip(view.blocks, keys, view.probabilities, model_labels, labels, strict=True)
            ],
        }

    def pages_json(self) -> dict[str, Any]:
        status = self.store.status()
        return {"dataset": self.store.dataset.name, "labels": str(self.store.labels_dir), "pages": status,
                "done": sum(s["done"] for s in status), "next": self.store.next_page()}

    def save(self, page_id: str, body: dict[str, Any]) -> dict[str, Any]:
        view = self.view(page_id)
        labels = body.get("labels")
        if not isinstance(labels, list):
            raise AnnotationError("labels must be a list of 0/1, one per block")
        if body.get("blocks") is not None and body.get("blocks") != len(view.blocks):
            raise AnnotationError(f"page {page_id} has {len(view.blocks)} blocks, not {body.get('blocks')}")
        note = body.get("note") or ""
        if not isinstance(note, str):
            raise AnnotationError("note must be a string")
        done = body.get("done", False)
        if not isinstance(done, bool):
            raise AnnotationError("done must be true or false")
        kind = body["kind"] if "kind" in body else KEEP  # an explicit null unsets it
        ann = self.store.save(page_id, view.blocks, [int(y) if isinstance(y, (bool, int)) else -1 for y in labels],
                              done=done, kind=kind, note=note)
        return {"saved": page_id, "updated": ann.updated, "done": ann.done, "body_blocks": sum(ann.labels.values()),
                "next": self.store.next_page(page_id)}


def make_view(page_id: str, html: bytes | str, url: str | None, extractor: Any) -> PageView:
    """Segment a page (the lxml tree kept for the render) and score it with the extractor."""
    from bodyblocks.page.segment import segment_tree

    owners: list[Any] = []  # each block's element, from the walk itself (its xpath counts only what it visits)
    try:
        doc, tree = segment_tree(html, owners=owners)
    except InputError as exc:
        raise AnnotationError(f"page {page_id}: {exc.reason}: {exc}") from exc
    probs: list[float] = [0.0] * len(doc.blocks)
    kept: list[int] = []
    if extractor is not None and doc.blocks:
        ex = extractor.extract(html)
        if ex.blocks is not None and len(ex.blocks) == len(doc.blocks):
            probs = [float(p) for p in (ex.probabilities or probs)]
            kept = list(ex.kept or [])
    return PageView(page_id, url, doc.title, doc.blocks, probs, kept, render_page(tree, doc.blocks, owners))


def render_page(tree: Any, blocks: Sequence[Block], owners: Sequence[Any] = ()) -> bytes:
    """The page for the side pane: the parsed tree without scripts, frames, form controls or external loads,
    and each block's element (`owners`, from the walk) marked with data-bb (block indices). A page parsed by
    BeautifulSoup (nested deeper than libxml2 allows) is shown as its blocks' text instead."""
    import copy
    import html as html_mod

    import lxml.etree
    import lxml.html

    if tree is None or len(owners) != len(blocks):
        rows = "".join(f'<p data-bb="{b.index}">{html_mod.escape(b.text)}</p>' for b in blocks)
        return f"<!doctype html><meta charset=utf-8><body>{rows}</body>".encode()
    doc = tree.getroottree()
    paths = [doc.getpath(el) if el is not None else None for el in owners]
    root = copy.deepcopy(tree)  # the cached tree stays as parsed; the copy has the same paths
    copied = root.getroottree()
    for el in root.iter():
        if isinstance(el.tag, str) and "data-bb" in el.attrib:  # the page's own: only ours may mark blocks
            del el.attrib["data-bb"]
    marks: dict[Any, list[int]] = {}
    for b, path in zip(blocks, paths, strict=True):
        found = copied.xpath(path) if path else []
        if found and isinstance(found[0].tag, str):
            marks.setdefault(found[0], []).append(b.index)
    for el, idx in marks.items():
        el.attrib["data-bb"] = " ".join(map(str, idx))
    # lxml.html's elements (drop_tree, drop_tag) from the marked copy: the marks are attributes, so they stay
    root = lxml.html.document_fromstring(lxml.etree.tostring(root, encoding="unicode", method="html"))
    for el in list(root.iter(*_DROP_TAGS, lxml.etree.Comment)):
        el.drop_tree()
    for el in list(root.iter(*_UNWRAP_TAGS)):  # a form's content is the page (ASP.NET, government sites)
        el.drop_tag()
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        for name in list(el.attrib):
            low = name.lower()
            value = el.attrib[name]
            if _SCRIPT_URL.search(_URL_IGNORED.sub("", unquote(value))):  # any attribute, SVG and MathML too
                del el.attrib[name]
            elif low.startswith("on") or low in ("src", "srcset", "href", "action", "formaction", "background",
                                                 "poster", "autofocus", "tabindex", "contenteditable") \
                    or low.endswith(":href"):
                if low in ("href",):
                    el.attrib["data-href"] = value
                del el.attrib[name]
    out: bytes = lxml.html.tostring(root, encoding="utf-8", doctype="<!doctype html>")
    return out.replace(b"<head>", b'<head><meta charset="utf-8">', 1)


def _allowed_hosts(host: str, port: int) -> set[str]:
    """The Host headers a request may carry: this server's address by the names it has. On every interface
    (0.0.0.0, ::), the machine's own names and addresses; a name of another site (DNS rebinding) never."""
    import socket

    names = {host, "127.0.0.1", "localhost", "[::1]"}
    if host in ("0.0.0.0", "::", ""):
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            try:
                names.update(info[4][0] for info in socket.getaddrinfo(name, None))
            except OSError:
                pass
    return {f"[{n}]:{port}" if ":" in n and not n.startswith("[") else f"{n}:{port}" for n in names}


def make_handler(app: Annotator, hosts: set[str]) -> type[BaseHTTPRequestHandler]:
    from bodyblocks.annotate.ui import index_html

    class Handler(BaseHTTPRequestHandler):
        server_version = "bodyblocks-annotate"
        protocol_version = "HTTP/1.1"
        timeout = CLIENT_TIMEOUT_S  # on the connection's socket: a stalled read or write ends the connection

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def setup(self) -> None:
            super().setup()
            self._reader = _DeadlineReader(self.connection, self.timeout)
            self.rfile = io.BufferedReader(self._reader)

        def handle_one_request(self) -> None:
            self._reader.deadline = time.monotonic() + REQUEST_DEADLINE_S  # this request's, its body included
            super().handle_one_request()

        def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
            self.connection.settimeout(self.timeout)  # the reads' deadline is not the response's
            headers = {"Content-Security-Policy": DATA_CSP, "X-Frame-Options": "DENY", **(extra or {})}
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, obj: Any) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

        def _error(self, status: int, message: str, close: bool = False) -> None:
            if close:  # a body left unread must not be parsed as the next request
                self.close_connection = True
            self._json(status, {"error": message})

        def _host_ok(self) -> bool:
            if self.headers.get("Host") not in hosts:
                self._error(HTTPStatus.FORBIDDEN, "unknown Host", close=True)
                return False
            return True

        def _page_id(self, prefix: str) -> str:
            return unquote(urlsplit(self.path).path[len(prefix):])

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if not self._host_ok():
                return
            path = urlsplit(self.path).path
            try:
                if path == "/":
                    self._send(HTTPStatus.OK, index_html(app.token).encode("utf-8"), "text/html; charset=utf-8",
                               {"Content-Security-Policy": INDEX_CSP})
                elif path == "/api/pages":
                    self._json(HTTPStatus.OK, app.pages_json())
                elif path.startswith("/api/page/"):
                    self._json(HTTPStatus.OK, app.page_json(self._page_id("/api/page/")))
                elif path.startswith("/render/"):
                    view = app.view(self._page_id("/render/"))
                    self._send(HTTPStatus.OK, view.render, "text/html; charset=utf-8",  # the side pane's
                               {"Content-Security-Policy": RENDER_CSP, "X-Frame-Options": "SAMEORIGIN"})
                else:
                    self._error(HTTPStatus.NOT_FOUND, "no such route")
            except AnnotationError as exc:
                self._error(HTTPStatus.NOT_FOUND, str(exc))
            except Exception as exc:  # noqa: BLE001 - the page shows the error instead of a dropped connection
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")

        def do_POST(self) -> None:  # noqa: N802
            if not self._host_ok():
                return
            path = urlsplit(self.path).path
            given = self.headers.get(TOKEN_HEADER, "").encode("utf-8", "surrogateescape")
            if not secrets.compare_digest(given, app.token.encode()):
                self._error(HTTPStatus.FORBIDDEN, f"missing or wrong {TOKEN_HEADER}", close=True)
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body of at most {MAX_BODY} bytes", close=True)
                return
            if not path.startswith("/api/page/"):
                self._error(HTTPStatus.NOT_FOUND, "no such route", close=True)
                return
            try:
                raw = self.rfile.read(length)
            except OSError:  # its deadline passed (TimeoutError) or the client left: nothing to answer
                self.close_connection = True
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise AnnotationError("the body must be a JSON object")
                self._json(HTTPStatus.OK, app.save(self._page_id("/api/page/"), body))
            except (AnnotationError, ValueError) as exc:
                self._error(HTTPStatus.BAD_REQUEST, str(exc))
            except Exception as exc:  # noqa: BLE001 - e.g. a labels folder that cannot be written: say so
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")

    return Handler


class _DeadlineReader(io.RawIOBase):
    """A connection's reads, each given no more time than its request has left (`deadline`, time.monotonic) and
    at most `timeout` seconds: past the deadline a read raises TimeoutError, which ends the connection."""

    def __init__(self, sock: Any, timeout: float | None) -> None:
        self.sock, self.timeout, self.deadline = sock, timeout, float("inf")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not sent within its deadline")
        self.sock.settimeout(left if self.timeout is None else min(left, self.timeout))
        n: int = self.sock.recv_into(buffer)
        return n


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `slots` connections served at once (a thread each); one more is answered
    503 and closed at once."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], slots: int) -> None:
        super().__init__(address, BaseHTTPRequestHandler)
        self._slots = threading.BoundedSemaphore(slots)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
                                b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: its slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_server(app: Annotator, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    """The HTTP server (not started); port 0 picks a free one (server.server_address says which)."""
    server = _Server((host, port), MAX_CLIENTS)
    bound = server.server_address[1]
    server.RequestHandlerClass = make_handler(app, _allowed_hosts(host, int(bound)))
    return server
