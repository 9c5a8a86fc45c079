"""The bytes a WARC file's records are framed in (batch/warc_frames.py): an uncompressed file mapped whole, or one
gzip member inflated as a stream through a window that holds one record and what is read ahead.

Both hold the positions where a scan for the end of WARC headers, and what those headers hold, last stopped: the
scans that look for the next record past damage frame many candidate records whose headers overlap, and each byte
of those headers is then scanned once, not once per candidate (hostile bytes dense with `WARC/1.0` lines).
"""

from __future__ import annotations

import mmap
import zlib

GZIP_MAGIC = b"\x1f\x8b\x08"  # a gzip member's first bytes (deflate)
MAX_HEADER_BYTES = 1 << 20  # of a record's WARC header block
CHUNK = 1 << 20  # at most this many bytes inflated, or scanned, at a time
FIRST_FEED = 1 << 14  # compressed bytes first fed to a member (doubling): one record's member is small
BOMB_FACTOR = 4  # a member that inflates past this many times the record limit with no record in it...
BOMB_RATIO = 100  # ...at more than this many bytes out per byte in is left there (a decompression bomb)

# where headers end (lo, pos, hit): no CRLF CRLF starts in [lo, pos), and one starts at pos when hit
HeaderEnd = tuple[int, int, bool]
# what headers ending at `end` hold past `lo` (end, lo, break, content-length): the first `WARC/1.` line there that
# starts a record, and the first Content-Length line (its start and value)
HeaderFacts = tuple[int, int, int | None, tuple[int, int] | None]


class _Scans:
    hend: HeaderEnd = (0, 0, False)
    facts: HeaderFacts | None = None
    pad: tuple[int, int] = (0, 0)  # [lo, hi): blanks and NUL bytes, up to what is none


class Mapped(_Scans):
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


class Member(_Scans):
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
            return self._end(next_member(self.mm, self.pos), f"truncated: the gzip member at offset {self.pos} "
                                                             "ends before its end (a cut file)")
        try:
            piece = d.decompress(data, CHUNK)
        except zlib.error as exc:
            return self._end(next_member(self.mm, self.pos), f"malformed: the gzip member at offset {self.pos} is "
                                                             f"broken ({exc})")
        self.buf += piece
        self.out += len(piece)
        if d.eof:
            return self._end(self.at - len(d.unused_data))
        out, read = self.out - self.mark[0], self._consumed() - self.mark[1]
        if out > self.budget and out > BOMB_RATIO * read:
            return self._end(next_member(self.mm, self._consumed()), f"too-large: the gzip member at offset "
                             f"{self.pos} inflates past {self.budget} bytes with no record in them")
        return None

    def _end(self, nxt: int, error: str | None = None) -> None:
        self.done, self.next, self.error = True, nxt, error


Stream = Mapped | Member


def next_member(mm: mmap.mmap, pos: int) -> int:
    """Where the next gzip member after `pos` starts (the file's end when none does)."""
    nxt = mm.find(GZIP_MAGIC, pos + 1)
    return len(mm) if nxt < 0 else nxt


def stream_end(s: Stream) -> int:
    """How far the stream reaches now (its end, once a scan has met it)."""
    return s.base + len(s.buf)
