"""Web archives (WARC) in: each HTML response record of a .warc.gz or .warc file as one page.

    for item in iter_warc("crawl.warc.gz"):
        item.skip       # not a page: "request-record", "not-html", "http-status", ... (counted, no output)
        item.error      # a page that cannot be read: "truncated: ...", "malformed: ...", "too-large: ..."
        item.body, item.charset, item.url, item.record_id, item.language

Records are framed here, one at a time and bounded in size (a gzip member, as every crawler writes them, or a
record of an uncompressed file, by its Content-Length), and parsed by warcio (WARC and HTTP headers, chunked
transfer and content encodings). A record that cannot be read becomes an item with its error and the reader goes
on at the next gzip member (or the next `WARC/1.` line): one bad record never ends a file. The HTTP
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

from bodyblocks.page.decode import MAX_INPUT_BYTES, declared_language
from bodyblocks.runtime.extras import require

WARC_SUFFIXES = (".warc.gz", ".warc")
GZIP_MAGIC = b"\x1f\x8b\x08"  # a gzip member's first bytes (deflate)
MAX_HEADER_BYTES = 1 << 20  # of a record's WARC header block
CHUNK = 1 << 20  # compressed bytes fed to zlib at a time
# a member whose output passes this many times the record limit is left there (a decompression bomb): the
# reader looks for the next member instead of inflating the rest
BOMB_FACTOR = 4
HTML_TYPES = frozenset(["text/html", "application/xhtml+xml"])
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_VERSION_LINE = re.compile(rb"WARC/1\.[01]\r?\n")
_NEXT_RECORD = re.compile(rb"\nWARC/1\.[01]\r?\n")
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
            chunks = _gzip_records(mm, limit) if gzipped else _plain_records(mm, limit)
            for offset, raw, error in chunks:
                yield WarcItem(offset, error=error) if raw is None else _item(offset, raw, limit)


Chunk = tuple[int, bytes | None, str | None]  # offset, one record's bytes (None: unreadable), error


def _framing(data: bytes | mmap.mmap, at: int) -> tuple[int, int] | str:
    """(end of the header block, Content-Length) of the record at `at`, or why there is no record there."""
    if not _VERSION_LINE.match(data, at):
        return "malformed: no WARC/1.0 or WARC/1.1 line where a record starts"
    end = data.find(b"\r\n\r\n", at, at + MAX_HEADER_BYTES)
    if end < 0:
        return f"malformed: no end of the WARC headers within {MAX_HEADER_BYTES} bytes"
    m = _CONTENT_LENGTH.search(data, at, end + 2)
    if m is None:
        return "malformed: no Content-Length in the WARC headers"
    return end + 4, int(m.group(1))


def _records_in(data: bytes, offset: int, limit: int) -> Iterator[Chunk]:
    """The records of one decompressed gzip member (normally one); a short one is truncated."""
    at = 0
    while at < len(data) and data[at:].strip():
        frame = _framing(data, at)
        if isinstance(frame, str):
            yield offset, None, f"{frame} (offset {offset})"
            return
        body_at, length = frame
        if length > limit:
            yield offset, None, f"too-large: the record at offset {offset} holds {length} bytes (limit {limit})"
            return
        if body_at + length > len(data):
            yield offset, None, (f"truncated: the record at offset {offset} holds {len(data) - body_at} of its "
                                 f"{length} bytes")
            return
        yield offset, bytes(data[at : body_at + length]), None
        at = body_at + length
        while data[at : at + 2] == b"\r\n":  # the two CRLFs after each record
            at += 2


def _gzip_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """Record by record, one gzip member at a time, each inflated with a bound."""
    pos, size = 0, len(mm)
    cap = limit + MAX_HEADER_BYTES
    while pos < size:
        if mm[pos : pos + 3] != GZIP_MAGIC:
            nxt = mm.find(GZIP_MAGIC, pos + 1)
            nxt = size if nxt < 0 else nxt
            if mm[pos:nxt].strip(b"\x00\r\n\t "):  # padding between members is no record
                yield pos, None, f"malformed: {nxt - pos} bytes at offset {pos} that are no gzip member"
            pos = nxt
            continue
        data, end, error = _inflate(mm, pos, cap)
        if error is not None:
            yield pos, None, error
        else:
            yield from _records_in(data, pos, limit)
        pos = end


def _inflate(mm: mmap.mmap, pos: int, cap: int) -> tuple[bytes, int, str | None]:
    """The gzip member at `pos`: (its bytes, where the next member starts, error). Past `cap` bytes of output
    it is too-large; a broken or cut member is malformed or truncated, and reading goes on at the next gzip
    header after it."""
    d = zlib.decompressobj(31)
    parts: list[bytes] = []
    out, at, size = 0, pos, len(mm)
    while not d.eof:
        if d.unconsumed_tail:
            data = d.unconsumed_tail
        elif at < size:
            data = mm[at : at + CHUNK]
            at += len(data)
        else:
            return b"", size, f"truncated: the gzip member at offset {pos} ends before its end (a cut file)"
        try:
            piece = d.decompress(data, CHUNK)
        except zlib.error as exc:
            return b"", _next_member(mm, pos), f"malformed: the gzip member at offset {pos} is broken ({exc})"
        out += len(piece)
        if out > cap * BOMB_FACTOR:
            return b"", _next_member(mm, pos), f"too-large: the gzip member at offset {pos} inflates past {cap} bytes"
        if out <= cap:
            parts.append(piece)
    end = at - len(d.unused_data)
    if out > cap:
        return b"", end, f"too-large: the gzip member at offset {pos} inflates to {out} bytes (limit {cap})"
    return b"".join(parts), end, None


def _next_member(mm: mmap.mmap, pos: int) -> int:
    nxt = mm.find(GZIP_MAGIC, pos + 1)
    return len(mm) if nxt < 0 else nxt


def _plain_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """Record by record through an uncompressed file, by Content-Length; after a malformed record, reading goes
    on at the next `WARC/1.` line."""
    pos, size = 0, len(mm)
    while pos < size:
        while mm[pos : pos + 2] == b"\r\n":
            pos += 2
        if pos >= size:
            return
        frame = _framing(mm, pos)
        if isinstance(frame, str):
            yield pos, None, f"{frame} (offset {pos})"
            m = _NEXT_RECORD.search(mm, pos + 1)
            pos = size if m is None else m.start() + 1
            continue
        body_at, length = frame
        if body_at + length > size:
            yield pos, None, f"truncated: the record at offset {pos} holds {size - body_at} of its {length} bytes"
            return
        if length > limit:
            yield pos, None, f"too-large: the record at offset {pos} holds {length} bytes (limit {limit})"
        else:
            yield pos, mm[pos : body_at + length], None
        pos = body_at + length


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
