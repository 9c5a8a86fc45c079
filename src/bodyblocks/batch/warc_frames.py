"""Where the records of a WARC file are: bounded framing, gzip inflated as a stream, resynchronising after damage
without ever taking a record quoted inside another's payload for a record.

A record is `WARC/1.x` + headers + CRLF CRLF + Content-Length bytes (+ CRLF CRLF). An uncompressed file is mapped
and read in place. A .warc.gz is a series of gzip members, normally one record each as crawlers write them, but a
file gzipped whole is one member holding every record: each member is inflated as a stream (batch/warc_streams.py)
through a window that holds one record (at most the record limit plus its headers) and what is read ahead, so that
a member of any size is read in linear time and bounded memory, the size limits applying record by record.

A record is taken when its headers end within MAX_HEADER_BYTES and it holds a Content-Length of at most the limit
and all those bytes, unless a real record starts inside those bytes (it was cut short: reading goes on there). A
`WARC/1.` line starts a real record, and no record quoted in a payload, when that record's Content-Length ends at
the stream's end or at what starts a record (a `WARC/1.` line, or a record whose version line is broken, past
blanks and NUL padding); inside a record's bytes, the records from it on must so follow one another up to the
first that ends past that record's claimed end. So what follows a record taken (junk, NUL padding, a damaged
record) is never looked for inside its bytes, and reading goes on past damage only at a real record. Inside
headers, a `WARC/1.` line starts the next record at a line start or where the headers then hold two records'
fields, and otherwise ends a field's value (a Target-URI ending in WARC/1.0). A record that cannot be read is
reported (`malformed`, `truncated`, `too-large`) with the bytes skipped to the next real record; bytes between
records that are no record are one `malformed` error with their count, and a record whose version line is broken
or lost is skipped by its Content-Length when that ends at a record. Only a too-large record of an uncompressed
file whose Content-Length ends at the next record is skipped by its length. A gzip member that is broken or cut
ends at the next gzip header; one that inflates past BOMB_FACTOR times the record limit with no record in it, far
beyond what its compressed bytes could hold as text (a decompression bomb), is left there. NUL padding between
gzip members is reported like other bytes that are no member; blank lines there are not.
"""

from __future__ import annotations

import mmap
import re
from array import array
from collections.abc import Iterator

from bodyblocks.batch.warc_streams import (
    BOMB_FACTOR,
    CHUNK,
    GZIP_MAGIC,
    MAX_HEADER_BYTES,
    Mapped,
    Member,
    Stream,
    next_member,
    stream_end,
)

__all__ = ["GZIP_MAGIC", "MAX_HEADER_BYTES", "gzip_records", "plain_records"]

HEADER_PEEK = 1 << 16  # headers are looked for here first, then up to MAX_HEADER_BYTES
QUICK_HEADERS = 1 << 11  # headers ending within this many bytes are framed without the scans' memos
FIELD_SPAN = 1 << 12  # how far past a version line inside headers the next record's same field is looked for
PADDING = b"\r\n\t "  # between gzip members: no damage
PAD = PADDING + b"\0"  # may follow a record (a crashed writer's preallocated bytes)
DAMAGED_PEEK = 1 << 13  # where the headers of a record with a broken version line are looked for, past a record
_VERSION_LINE = re.compile(rb"WARC/1\.[01]\r?\n")
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,30})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_NO_VERSION = "malformed: no WARC/1.0 or WARC/1.1 line where a record starts"
_HEADERS_CUT = "truncated: the data ends inside the WARC headers"

Chunk = tuple[int, bytes | None, str | None]  # offset, one record's bytes (None: unreadable), error


def plain_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """The records of an uncompressed file."""
    yield from _records(Mapped(mm), limit)


def gzip_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """The records of a gzipped file, member by member, each inflated as a stream."""
    pos, size = 0, len(mm)
    budget = (limit + MAX_HEADER_BYTES) * BOMB_FACTOR
    while pos < size:
        if mm[pos : pos + 3] != GZIP_MAGIC:
            nxt = next_member(mm, pos)
            if not _blank(mm, pos, nxt):  # blank lines between members are no record; NUL padding is damage
                yield pos, None, f"malformed: {nxt - pos} bytes at offset {pos} that are no gzip member"
            pos = nxt
            continue
        member = Member(mm, pos, budget)
        yield from _records(member, limit)
        pos = member.next


def _blank(mm: mmap.mmap, start: int, end: int) -> bool:
    """Whether mm[start:end] is all CR, LF, tab and space, looked at a CHUNK at a time."""
    return all(not mm[p : min(end, p + CHUNK)].strip(PADDING) for p in range(start, end, CHUNK))


def _records(s: Stream, limit: int) -> Iterator[Chunk]:
    """Record after record of one stream; a bad one is reported with the bytes skipped to the next real record."""
    at = 0
    while True:
        at = _skip_blank(s, at, drop=True)
        if s.ensure(at + 1) <= at:
            break
        offset, where = s.where(at)
        frame = _framing(s, at)
        if frame[1] is _NO_VERSION and (end := _damaged(s, at, MAX_HEADER_BYTES, limit)) is not None:
            yield offset, None, (f"malformed: a record with no WARC/1.0 or WARC/1.1 line ({where}; {end - at} bytes "
                                 "skipped by its Content-Length)")
            at = end
            continue
        if isinstance(frame[1], str):
            resume, reason = frame
            # no CRLF CRLF from here to the stream's end: no record after these headers can be whole either
            nxt = None if reason is _HEADERS_CUT else _find_record(s, resume, None, None, limit)
            skipped = (stream_end(s) if nxt is None else nxt) - at
            if nxt is None and _fail(s):  # the damage is where the stream broke: one error for both
                yield offset, None, _cut(s, "")
            elif reason is _NO_VERSION:
                yield offset, None, f"malformed: {skipped} bytes that are no WARC record ({where})"
            else:
                yield offset, None, f"{_cut(s, reason) if reason is _HEADERS_CUT else reason} ({where}; " \
                                    f"{skipped} bytes skipped)"
            if nxt is None:
                break
            at = nxt
            continue
        body_at, length = frame
        body_end = body_at + length
        if length > limit:
            if s.seekable and _after(s, body_end, limit) is not False:  # a true Content-Length: skipped by it
                yield offset, None, f"too-large: the record at {where} holds {length} bytes (limit {limit})"
                at = body_end
                continue
            nxt = _find_record(s, body_at, None, None, limit)
            skipped = (stream_end(s) if nxt is None else nxt) - at
            yield offset, None, (f"too-large: the record at {where} holds {length} bytes (limit {limit}; "
                                 f"{skipped} bytes skipped)")
            if nxt is None:
                break
            at = nxt
            continue
        reach = s.ensure(body_end + 16)
        whole = reach >= body_end and _ends_here(s, body_end)
        inner = None if whole else _find_record(s, body_at, min(reach, body_end), body_end, limit)
        if reach < body_end:  # the stream ends inside the record
            yield offset, None, _cut(s, f"truncated: the record at {where} holds {reach - body_at} of its {length} "
                                        "bytes")
        elif inner is not None:
            yield offset, None, (f"truncated: the record at {where} is cut short: a record starts "
                                 f"{inner - body_at} bytes into its {length}")
        else:  # whole, or what follows it is no record: never looked for inside its bytes
            yield offset, bytes(s.buf[at - s.base : body_end - s.base]), None
            s.kept()
            at = body_end
            continue
        if inner is None:
            break
        at = inner
    if s.error is not None and not s.reported:
        yield s.where(0)[0], None, _cut(s, "")


def _fail(s: Stream) -> bool:
    return s.error is not None and not s.reported


def _cut(s: Stream, reason: str) -> str:
    """The stream's own error when it broke and has not been told yet (once), else `reason`."""
    if _fail(s):
        s.reported = True
        return s.error or reason
    return reason


def _framing(s: Stream, at: int) -> tuple[int, int] | tuple[int, str]:
    """(body start, Content-Length) of the record at `at`, else (where a record may start next, why there is none
    here). No side effect on the stream's error (candidates are framed while looking for a real record)."""
    b, buf = s.base, s.buf
    s.ensure(at + QUICK_HEADERS)
    if not _VERSION_LINE.match(buf, at - b):
        return at + 1, _NO_VERSION
    # most headers: their end within QUICK_HEADERS, no other version line, a Content-Length (no memo to keep)
    end = buf.find(b"\r\n\r\n", at - b, at + QUICK_HEADERS - b)
    if end >= 0 and _VERSION_LINE.search(buf, at + 1 - b, end) is None:
        m = _CONTENT_LENGTH.search(buf, at - b, end + 2)
        if m is not None:
            return b + end + 4, int(m.group(1))
    end = _header_end(s, at)
    if end < 0:
        if s.ensure(at + MAX_HEADER_BYTES) < at + MAX_HEADER_BYTES:
            return at + 1, _HEADERS_CUT
        return at + 1, f"malformed: no end of the WARC headers within {MAX_HEADER_BYTES} bytes"
    brk, length = _header_facts(s, at, end)
    if brk is not None:  # cut inside its headers, the next record's line joined to a cut one
        return brk, "truncated: the WARC headers are cut short by the next record"
    if length is None:  # no record starting before the end of these headers can hold one either
        return end, "malformed: no Content-Length in the WARC headers"
    return end + 4, length[1]


def _header_end(s: Stream, at: int) -> int:
    """Where the CRLF CRLF that ends the headers of a record at `at` starts, within MAX_HEADER_BYTES; -1: none.
    Searched from where the last search stopped when `at` lies inside the bytes it covered."""
    lo, pos, hit = s.hend
    if lo <= at <= pos:
        if hit:
            return pos if pos + 4 <= at + MAX_HEADER_BYTES else -1
        start = pos
    else:
        lo, start = at, at
    end, reach = -1, start
    for look in (HEADER_PEEK, MAX_HEADER_BYTES):
        reach = s.ensure(at + look)
        end = s.buf.find(b"\r\n\r\n", start - s.base, reach - s.base)
        if end >= 0 or reach < at + look:
            break
    if end >= 0:
        s.hend = (lo, s.base + end, True)
        return s.base + end
    s.hend = (lo, max(start, reach - 3), False)
    return -1


def _header_facts(s: Stream, at: int, end: int) -> tuple[int | None, tuple[int, int] | None]:
    """The first `WARC/1.` line after `at` that starts a record in headers ending at `end`, else the first
    Content-Length line there (start, value); what the last call found is reused when it holds for `at` too."""
    f = s.facts
    if f is not None and f[0] == end and f[1] <= at:
        _, _, brk, length = f
        if brk is not None and brk > at or brk is None and (length is None or length[0] > at):
            return brk, length
    brk, joined = None, None
    p = at + 1
    while brk is None:
        m = _VERSION_LINE.search(s.buf, p - s.base, end - s.base)
        if m is None:
            break
        p = s.base + m.start()
        verdict = _breaks(s, at, p, end)
        if verdict is None:  # the field's value may end so: a cut when the headers hold two records' fields
            joined = _two_records(s, at, end) if joined is None else joined
            verdict = joined
        brk = p if verdict else None
        p += 1
    length = None
    if brk is None:  # looked for only then: candidates cut short by the next one never scan the rest
        m = _CONTENT_LENGTH.search(s.buf, at - s.base, end + 2 - s.base)
        length = None if m is None else (s.base + m.start(), int(m.group(1)))
    s.facts = (end, at, brk, length)
    return brk, length


def _breaks(s: Stream, at: int, pos: int, end: int) -> bool | None:
    """Whether the `WARC/1.` line at `pos`, inside the headers [at, end), starts the next record (one cut short in
    its headers runs on into it, even mid-line) rather than ending a field's value (a Target-URI ending in WARC/1.0):
    it does at a line start, after a field cut before its colon, or when the headers then repeat that line's field;
    None: it may end the value."""
    b, buf = s.base, s.buf
    start = max(at, buf.rfind(b"\n", at - b, pos - b) + 1 + b)
    if start == pos:
        return True
    colon = buf.find(b":", start - b, pos - b)
    if colon < 0:
        return True
    name = bytes(buf[start - b : colon]).strip()
    if name and buf.find(b"\n" + name + b":", pos - b, min(end, pos + FIELD_SPAN) - b) >= 0:
        return True
    return None


def _two_records(s: Stream, at: int, end: int) -> bool:
    """Whether the headers [at, end) hold two WARC-Type or two WARC-Record-ID fields (two records' headers joined)."""
    b, buf = s.base, s.buf
    for field in (b"\nWARC-Type:", b"\nWARC-Record-ID:"):
        first = buf.find(field, at - b, end - b)
        if first >= 0 and buf.find(field, first + 1, end - b) >= 0:
            return True
    return False


def _ends_here(s: Stream, end: int) -> bool:
    """Whether the stream reaches `end` and ends there, or a `WARC/1.` line starts there (after blanks)."""
    if s.ensure(end) < end:
        return False
    end = _skip_blank(s, end, drop=False)
    reach = s.ensure(end + 16)
    return reach <= end or _VERSION_LINE.match(s.buf, end - s.base, reach - s.base) is not None


def _skip_blank(s: Stream, at: int, drop: bool) -> int:
    """Past the whitespace at `at` (the CRLFs between records, padding at the end); `drop`: out of the window."""
    while True:
        reach = s.ensure(at + 256)
        chunk = s.buf[at - s.base : reach - s.base]
        skipped = len(chunk) - len(chunk.lstrip())
        at += skipped
        if drop:
            s.release(at)
        if skipped < len(chunk) or len(chunk) < 256:
            return at


def _find_record(s: Stream, start: int, stop: int | None, until: int | None, limit: int) -> int | None:
    """The first real record (`_real`) whose `WARC/1.` line starts in [start, stop) (a cut record's last line may
    run on into it); None: none there. `stop` None: up to the stream's end, scanned a CHUNK at a time, the window
    dropping what was scanned. `until`: the scan is inside a record's bytes, which claim to end there."""
    failed = None if until is None else _Failed(start, until)
    p = start
    while True:
        top = p + CHUNK if stop is None else stop
        reach = s.ensure(top)
        while True:
            m = _VERSION_LINE.search(s.buf, p - s.base, reach - s.base)
            if m is None:
                break
            c = s.base + m.start()
            if _real(s, c, until, limit, failed):
                return c
            p = c + 1
        if stop is not None or reach < top:
            return None
        p = max(p, reach - 16)
        s.release(p)


class _Failed:
    """Where records inside one record's bytes [start, until) were found not real: a bit a byte (at most the
    record limit / 8 bytes), so that the records chained inside it are each followed once, however many."""

    def __init__(self, start: int, until: int) -> None:
        self.start, self.until = start, until
        self.bits = bytearray((until - start + 8) >> 3)

    def __contains__(self, p: int) -> bool:
        i = p - self.start
        return p < self.until and bool(self.bits[i >> 3] & (1 << (i & 7)))

    def add(self, walked: array[int]) -> None:
        for p in walked:
            if p < self.until:
                i = p - self.start
                self.bits[i >> 3] |= 1 << (i & 7)


def _real(s: Stream, p: int, until: int | None, limit: int, failed: _Failed | None) -> bool:
    """Whether the `WARC/1.` line at `p` starts a record, not a quote of one inside a payload: its Content-Length
    ends at what starts a record or at the stream's end (`_after`); inside a record's bytes claimed up to `until`,
    so does every record from it on up to the first that ends past `until`. A record too large to hold, or ending
    beyond MAX_HEADER_BYTES past the scan, is taken on trust: a quote's length is small."""
    horizon = max(p, until or p) + MAX_HEADER_BYTES
    walked = array("q")
    ok = True
    while True:
        if failed is not None and p in failed:
            ok = False
            break
        walked.append(p)
        frame = _framing(s, p)
        if isinstance(frame[1], str):
            ok = frame[1] is _HEADERS_CUT  # a record cut at the stream's end: reported as one
            break
        end = frame[0] + frame[1]
        if frame[1] > limit or end > horizon or s.ensure(end) < end:
            break
        nxt = _after(s, end, limit)
        if nxt is True or nxt is False or until is None or end >= until:
            ok = nxt is not False
            break
        p = nxt
    if not ok and failed is not None:
        failed.add(walked)
    return ok


def _after(s: Stream, end: int, limit: int) -> int | bool:
    """What follows a record ending at `end`, past blanks and NUL padding: the next `WARC/1.` line's position;
    True: the stream's end, or a record whose version line is broken (`_damaged`); False: anything else, or a
    stream that ends before `end`."""
    if s.ensure(end) < end:
        return False
    q = _skip_pad(s, end)
    reach = s.ensure(q + 16)
    if reach <= q:
        return True
    if _VERSION_LINE.match(s.buf, q - s.base, reach - s.base):
        return q
    return _damaged(s, q, DAMAGED_PEEK, limit) is not None


def _skip_pad(s: Stream, at: int) -> int:
    """Past the blanks and NUL bytes at `at`; a run already crossed is remembered (many candidates end before one)."""
    lo, hi = s.pad
    if lo <= at < hi:
        return hi
    p = at
    while True:
        reach = s.ensure(p + 4096)
        chunk = s.buf[p - s.base : reach - s.base]
        rest = len(chunk.lstrip(PAD))
        p += len(chunk) - rest
        if rest or len(chunk) < 4096:
            s.pad = (at, p)
            return p


def _damaged(s: Stream, at: int, span: int, limit: int) -> int | None:
    """The end of a record at `at` whose `WARC/1.` line is broken or lost: its headers end within `span`, hold no
    version line and a Content-Length of at most `limit` that ends where the stream ends or a record starts."""
    reach = s.ensure(at + span)
    b = s.base
    end = s.buf.find(b"\r\n\r\n", at - b, reach - b)
    if end < 0 or s.buf.find(b"WARC/1.", at - b, end) >= 0:
        return None
    m = _CONTENT_LENGTH.search(s.buf, at - b, end + 2)
    if m is None or int(m.group(1)) > limit:
        return None
    stop = b + end + 4 + int(m.group(1))
    return stop if s.ensure(stop) >= stop and _ends_here(s, stop) else None
