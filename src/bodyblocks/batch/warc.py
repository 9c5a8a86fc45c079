"""Web archives (WARC) in: each HTML response record of a .warc.gz or .warc file as one page.

    for item in iter_warc("crawl.warc.gz"):
        item.skip       # not a page: "request-record", "not-html", "http-status", ... (counted, no output)
        item.error      # a page that cannot be read: "truncated: ...", "malformed: ...", "too-large: ..."
        item.body, item.charset, item.url, item.record_id, item.language

Records are framed one at a time, each bounded in size (batch/warc_frames.py: an uncompressed file mapped, each
gzip member inflated as a stream, so a file gzipped whole as one member is read in linear time and bounded memory
too), and parsed by warcio (WARC and HTTP headers, chunked transfer and content encodings). A record that cannot
be read becomes an item with its error, counting the bytes skipped, and the reader goes on at the next real
record (within a cut record when one starts there; a `WARC/1.` line quoted in a payload is none) or gzip member,
whatever its Content-Length claims: one bad record never ends a file. The HTTP
Content-Type's charset travels with the body, one more declared charset for decode.decode_bytes to try strictly.
"""

from __future__ import annotations

import io
import mmap
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bodyblocks.batch.warc_frames import GZIP_MAGIC, gzip_records, plain_records
from bodyblocks.page.decode import MAX_INPUT_BYTES, declared_language
from bodyblocks.runtime.extras import require

WARC_SUFFIXES = (".warc.gz", ".warc")
HTML_TYPES = frozenset(["text/html", "application/xhtml+xml"])
_CHARSET = re.compile(r"charset\s*=\s*[\"']?\s*([^\"';\s]+)", re.IGNORECASE)


@dataclass
class WarcItem:
    """One record of a WARC file: a page to extract, a failed one (`error`), or no page at all (`skip`)."""

    offset: int  # byte offset of the record (its gzip member) in the file
    record_id: str | None = None  # WARC-Record-ID, e.g. "<urn:uuid:...>"
    url: str | None = None  # WARC-Target-URI
    body: bytes | None = None  # the HTTP payload, transfer and content encodings undone
    charset: str | None = None  # the HTTP Content-Type's charset label
    language: str | None = None  # HTTP Content-Language, else what the page's markup declares
    truncated: bool = False  # WARC-Truncated: the crawler kept only the start of the payload
    error: str | None = None  # "reason: message"
    skip: str | None = None  # why the record is no page (request-record, not-html, http-status, ...)


def is_warc(path: Path) -> bool:
    """A WARC file, by its name (.warc, .warc.gz) or its first bytes (WARC/1., or a gzip member holding them)."""
    if path.name.lower().endswith(WARC_SUFFIXES):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(31).decompress(head, 16)
        except zlib.error:
            return False
    return head.startswith(b"WARC/1.")


def warc_stem(path: Path) -> str:
    """The file name without .warc.gz / .warc (the prefix of its pages' keys and shards)."""
    name = path.name
    for suffix in (*WARC_SUFFIXES, ".gz"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def iter_warc(path: str | Path, limit: int = MAX_INPUT_BYTES) -> Iterator[WarcItem]:
    """Every record of a WARC file in order, as WarcItems; a payload over `limit` bytes is a too-large error."""
    require("warcio", "reading WARC files")
    with open(path, "rb") as fh:
        if fh.seek(0, io.SEEK_END) == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            gzipped = mm[:3] == GZIP_MAGIC
            chunks = gzip_records(mm, limit) if gzipped else plain_records(mm, limit)
            for offset, raw, error in chunks:
                yield WarcItem(offset, error=error) if raw is None else _item(offset, raw, limit)


def _item(offset: int, raw: bytes, limit: int) -> WarcItem:
    """One record's bytes as a WarcItem (warcio parses the WARC and HTTP headers and undoes the encodings)."""
    from warcio.archiveiterator import ArchiveIterator

    item = WarcItem(offset)
    try:
        record = next(iter(ArchiveIterator(io.BytesIO(raw))), None)
        if record is None:
            return WarcItem(offset, error=f"malformed: no WARC record at offset {offset}")
        item.record_id = record.rec_headers.get_header("WARC-Record-ID")
        item.url = record.rec_headers.get_header("WARC-Target-URI")
        if record.rec_type != "response":
            item.skip = f"{record.rec_type}-record"
            return item
        http = record.http_headers
        if http is None or not http.protocol.upper().startswith("HTTP/"):
            item.skip = "not-http"
            return item
        item.skip = _not_a_page(http.get_statuscode(), http.get_header("Content-Type"))
        if item.skip is not None:
            return item
        body = record.content_stream().read(limit + 1)
    except Exception as exc:  # noqa: BLE001 - warcio on hostile bytes raises many kinds; the record fails alone
        item.error = f"malformed: the record at offset {offset} cannot be parsed ({type(exc).__name__}: {exc})"
        return item
    if len(body) > limit:
        item.error = f"too-large: the payload at offset {offset} is larger than {limit} bytes"
        return item
    content_type = http.get_header("Content-Type") or ""
    if not content_type and not _looks_like_html(body):
        item.skip = "not-html"
        return item
    m = _CHARSET.search(content_type)
    item.body, item.charset = body, m.group(1) if m else None
    item.language = declared_language(body, http.get_header("Content-Language"))
    item.truncated = bool(record.rec_headers.get_header("WARC-Truncated"))
    return item


def _not_a_page(status: str | None, content_type: str | None) -> str | None:
    """Why a response is no page to extract: not a 2xx status, or a Content-Type that is not HTML."""
    if not (status or "").startswith("2"):
        return "http-status"
    if content_type and content_type.split(";", 1)[0].strip().lower() not in HTML_TYPES:
        return "not-html"
    return None


def _looks_like_html(body: bytes) -> bool:
    """A response without a Content-Type: HTML when its start has an html, head or body tag or a doctype."""
    head = body[:2048].lstrip().lower()
    return head.startswith(b"<!doctype html") or any(t in head for t in (b"<html", b"<head", b"<body"))


@dataclass
class Response:
    """An HTTP response to write into a WARC file (`write_warc`)."""

    url: str
    body: bytes
    content_type: str | None = "text/html; charset=utf-8"  # None: no Content-Type header
    status: str = "200 OK"
    headers: list[tuple[str, str]] | None = None  # more HTTP headers


def write_warc(path: str | Path, responses: list[Response], gzip: bool = True, requests: bool = True) -> list[str]:
    """A WARC file of these responses (each after its request record when `requests`), written with warcio, one
    gzip member per record as crawlers write them; returns the responses' WARC-Record-IDs. For demos, tests
    and benchmarks (benchmarks/scale.py)."""
    require("warcio", "writing WARC files")
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    ids = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip)
        for r in responses:
            if requests:
                request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")], is_http_request=True)
                writer.write_record(writer.create_warc_record(r.url, "request", payload=io.BytesIO(b""),
                                                              http_headers=request))
            headers = [("Content-Type", r.content_type)] if r.content_type else []
            http = StatusAndHeaders(r.status, headers + list(r.headers or []), protocol="HTTP/1.1")
            record = writer.create_warc_record(r.url, "response", payload=io.BytesIO(r.body), http_headers=http)
            ids.append(record.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(record)
    return ids
