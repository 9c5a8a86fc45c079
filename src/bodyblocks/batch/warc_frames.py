"""Where the records of a WARC file are: bounded framing, gzip inflated as a stream, resynchronising after a bad record.

A record is `WARC/1.x` + headers + CRLF CRLF + Content-Length bytes (+ CRLF CRLF). An uncompressed file is mapped
and read in place. A .warc.gz is a series of gzip members, normally one record each as crawlers write them, but a
file gzipped whole is one member holding every record: each member is inflated as a stream through a window that
holds one record (at most the record limit plus its headers) and what is read ahead, so that a member of any size
is read in linear time and bounded memory, the size limits applying record by record.

A record is taken when its headers end within MAX_HEADER_BYTES, it holds a Content-Length of at most the limit
and all those bytes, and after them comes the end or a `WARC/1.` line; a record that passes all but the last is
taken too unless a record starts inside its bytes (then it was cut short). Every other record is reported
(`malformed`, `truncated`, `too-large`) and reading goes on at the next `WARC/1.` line after its headers: inside
its bytes when it was cut short, whatever its Content-Length claims. Only a too-large record of an uncompressed
file whose Content-Length ends at the next record is skipped by its length. A gzip member that is broken or cut
ends at the next gzip header; one that inflates past BOMB_FACTOR times the record limit with no record in it,
far beyond what its compressed bytes could hold as text (a decompression bomb), is left there.
"""

from __future__ import annotations

import mmap
import re
import zlib
from collections.abc import Iterator

GZIP_MAGIC = b"\x1f\x8b\x08"  # a gzip member's first bytes (deflate)
MAX_HEADER_BYTES = 1 << 20  # of a record's WARC header block
HEADER_PEEK = 1 << 16  # headers are looked for here first, then up to MAX_HEADER_BYTES
CHUNK = 1 << 20  # at most this many bytes inflated, or scanned, at a time
FIRST_FEED = 1 << 14  # compressed bytes first fed to a member (doubling): one record's member is small
BOMB_FACTOR = 4  # a member that inflates past this many times the record limit with no record in it...
BOMB_RATIO = 100  # ...at more than this many bytes out per byte in is left there (a decompression bomb)
_VERSION_LINE = re.compile(rb"WARC/1\.[01]\r?\n")
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,30})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)

Chunk = tuple[int, bytes | None, str | None]  # offset, one record's bytes (None: unreadable), error


class _Mapped:
    """An uncompressed file, mapped: every byte at hand."""

    seekable = True
    base = 0
    error: str | None = None
    reported = False

    def __init__(self, mm: mmap.mmap) -> None:
        self.buf = mm

    def ensure(self, upto: int) -> int:
        return min(upto, len(self.buf))

    def release(self, upto: int) -> None:
        pass

    def kept(self) -> None:
        pass

    def where(self, at: int) -> tuple[int, str]:
        return at, f"offset {at}"


class _Member:
    """One gzip member inflated as a stream: the window buf holds its bytes [base, base + len(buf))."""

    seekable = False

    def __init__(self, mm: mmap.mmap, pos: int, budget: int) -> None:
        self.mm, self.pos, self.budget = mm, pos, budget
        self.d = zlib.decompressobj(31)
        self.at, self.feed = pos, FIRST_FEED  # the next compressed byte, how many to feed next
        self.buf, self.base, self.out = bytearray(), 0, 0
        self.mark = (0, pos)  # output and input when the last record was taken
        self.done, self.next = False, len(mm)  # next: where the next member starts once done
        self.error: str | None = None
        self.reported = False

    def ensure(self, upto: int) -> int:
        """Inflate until the window reaches `upto` or the member ends; returns how far it reaches."""
        while not self.done and self.base + len(self.buf) < upto:
            self._inflate()
        return min(upto, self.base + len(self.buf))

    def release(self, upto: int) -> None:
        """Drop the bytes before `upto` (bytearray drops its front in constant time)."""
        if upto > self.base:
            del self.buf[: upto - self.base]
            self.base = upto

    def kept(self) -> None:
        self.mark = (self.out, self._consumed())

    def where(self, at: int) -> tuple[int, str]:
        return self.pos, f"offset {self.pos}" if at == 0 else f"offset {self.pos} + {at} inflated"

    def _consumed(self) -> int:
        return self.at - len(self.d.unconsumed_tail)

    def _inflate(self) -> None:
        d = self.d
        if d.unconsumed_tail:
            data = d.unconsumed_tail
        elif self.at < len(self.mm):
            data = self.mm[self.at : self.at + self.feed]
            self.at, self.feed = self.at + len(data), min(CHUNK, self.feed * 2)
        else:
            # a member cut short inflates the members after it as its own data (often without an error): reading
            # goes on at the next member start after this one's
            return self._end(_next_member(self.mm, self.pos), f"truncated: the gzip member at offset {self.pos} "
                                                              "ends before its end (a cut file)")
        try:
            piece = d.decompress(data, CHUNK)
        except zlib.error as exc:
            return self._end(_next_member(self.mm, self.pos), f"malformed: the gzip member at offset {self.pos} is "
                                                              f"broken ({exc})")
        self.buf += piece
        self.out += len(piece)
        if d.eof:
            return self._end(self.at - len(d.unused_data))
        out, read = self.out - self.mark[0], self._consumed() - self.mark[1]
        if out > self.budget and out > BOMB_RATIO * read:
            return self._end(_next_member(self.mm, self._consumed()), f"too-large: the gzip member at offset "
                             f"{self.pos} inflates past {self.budget} bytes with no record in them")
        return None

    def _end(self, nxt: int, error: str | None = None) -> None:
        self.done, self.next, self.error = True, nxt, error


Stream = _Mapped | _Member


def plain_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """The records of an uncompressed file."""
    yield from _records(_Mapped(mm), limit)


def gzip_records(mm: mmap.mmap, limit: int) -> Iterator[Chunk]:
    """The records of a gzipped file, member by member, each inflated as a stream."""
    pos, size = 0, len(mm)
    budget = (limit + MAX_HEADER_BYTES) * BOMB_FACTOR
    while pos < size:
        if mm[pos : pos + 3] != GZIP_MAGIC:
            nxt = _next_member(mm, pos)
            if mm[pos:nxt].strip(b"\x00\r\n\t "):  # padding between members is no record
                yield pos, None, f"malformed: {nxt - pos} bytes at offset {pos} that are no gzip member"
            pos = nxt
            continue
        member = _Member(mm, pos, budget)
        yield from _records(member, limit)
        pos = member.next


def _next_member(mm: mmap.mmap, pos: int) -> int:
    nxt = mm.find(GZIP_MAGIC, pos + 1)
    return len(mm) if nxt < 0 else nxt


def _records(s: Stream, limit: int) -> Iterator[Chunk]:
    """Record after record of one stream; a bad one is reported and reading resynchronises after its headers."""
    at, clear = 0, 0  # clear: no CRLF CRLF starts before it past the last failed header search
    while True:
        at = _skip_blank(s, at, drop=True)
        if s.ensure(at + 1) <= at:
            break
        offset, where = s.where(at)
        frame = _framing(s, at, clear)
        if isinstance(frame, str) or isinstance(frame[1], str):
            reason, resume = (frame, at + 1) if isinstance(frame, str) else (frame[1], frame[0])
            clear = max(clear, at + MAX_HEADER_BYTES - 3) if "end of the WARC headers" in reason else clear
            nxt = _resync(s, resume)
            if nxt is None and _fail(s):  # the junk is where the stream broke: one error for both
                yield offset, None, _cut(s, "")
            else:
                yield offset, None, f"{reason} ({where})"
            if nxt is None:
                break
            at = nxt
            continue
        body_at, length = frame
        body_end = body_at + length
        if length > limit:
            yield offset, None, f"too-large: the record at {where} holds {length} bytes (limit {limit})"
            if s.seekable and _ends_here(s, body_end):  # a true Content-Length: skipped by it
                at = body_end
                continue
            nxt = _resync(s, body_at)
            if nxt is None:
                break
            at = nxt
            continue
        reach = s.ensure(body_end + 16)
        whole = reach >= body_end and _ends_here(s, body_end)
        inner = None if whole else _inner_record(s, body_at, min(reach, body_end))
        if reach < body_end:  # the stream ends inside the record
            yield offset, None, _cut(s, f"truncated: the record at {where} holds {reach - body_at} of its {length} "
                                        "bytes")
        elif inner is not None:
            yield offset, None, (f"truncated: the record at {where} is cut short: a record starts "
                                 f"{inner - body_at} bytes into its {length}")
        else:
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


def _framing(s: Stream, at: int, clear: int) -> tuple[int, int] | tuple[int, str] | str:
    """(body start, Content-Length) of the record at `at`; a string: why there is none there; (resume, why):
    why, and that no record starts before `resume` either."""
    s.ensure(at + 16)
    if not _VERSION_LINE.match(s.buf, at - s.base):
        return "malformed: no WARC/1.0 or WARC/1.1 line where a record starts"
    end = -1
    for look in (HEADER_PEEK, MAX_HEADER_BYTES):
        reach = s.ensure(at + look)
        end = s.buf.find(b"\r\n\r\n", max(at, clear) - s.base, reach - s.base)
        if end >= 0 or reach < at + look:
            break
    if end < 0:
        if s.ensure(at + MAX_HEADER_BYTES) < at + MAX_HEADER_BYTES:
            return _cut(s, "truncated: the data ends inside the WARC headers")
        return f"malformed: no end of the WARC headers within {MAX_HEADER_BYTES} bytes"
    end += s.base
    m = _CONTENT_LENGTH.search(s.buf, at - s.base, end + 2 - s.base)
    inner = _VERSION_LINE.search(s.buf, at + 1 - s.base, end - s.base)
    if inner is not None:  # cut inside its headers, the next record's line joined to a cut one
        return s.base + inner.start(), "truncated: the WARC headers are cut short by the next record"
    if m is None:  # no record starting before the end of these headers can hold one either
        return end, "malformed: no Content-Length in the WARC headers"
    return end + 4, int(m.group(1))


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


def _inner_record(s: Stream, body_at: int, end: int) -> int | None:
    """Where a `WARC/1.` line starts inside a record's bytes (held in the window), if anywhere (a record cut
    mid-line runs on into the next record's first line)."""
    m = _VERSION_LINE.search(s.buf, body_at - s.base, end - s.base)
    return None if m is None else s.base + m.start()


def _resync(s: Stream, start: int) -> int | None:
    """The next `WARC/1.` line from `start` on (a cut record's last line may run on into it), scanned a CHUNK at
    a time (the window dropping what was scanned); None at the end of the stream."""
    p = start
    while True:
        reach = s.ensure(p + CHUNK)
        m = _VERSION_LINE.search(s.buf, p - s.base, reach - s.base)
        if m is not None:
            return s.base + m.start()
        if reach < p + CHUNK:
            return None
        p = reach - 16
        s.release(p)
