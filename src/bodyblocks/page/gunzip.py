"""Gzip pages read as browsers and gzip -d read them: the members at the start of the bytes, whatever follows.

    data = gunzip_stream(open("page.html.gz", "rb"), max_bytes=64 << 20, name="page.html.gz")

Servers and crawlers leave bytes after a complete gzip stream (zero padding, a second copy cut short, log
noise); Python's gzip module fails such a page as corrupt, a browser shows it. Decompression is bounded in
output (a bomb raises TooLarge) and stops reading at the first bytes that start no member.
"""

from __future__ import annotations

import zlib

from bodyblocks.errors import CorruptCompression, TooLarge

MAX_INPUT_BYTES = 64 * 1024 * 1024  # refuse anything bigger, compressed or not (decompression bombs)
CHUNK = 1 << 16  # compressed bytes read at a time


def gunzip_stream(fh, max_bytes: int, name: str) -> bytes:  # noqa: ANN001 - any binary file object
    """Decompress the gzip members at the start of `fh`, at most max_bytes in all. Bytes after a complete member
    that start no other member (zero padding, trailing garbage), or a later member that is broken, end the page
    there, as gzip -d and browsers do; a bomb raises TooLarge, a first member cut short or broken
    CorruptCompression."""
    out, complete = bytearray(), -1  # complete: the length of the members decompressed whole (-1: none yet)
    unzip = zlib.decompressobj(31)
    data = fh.read(CHUNK)
    try:
        while data:
            out += unzip.decompress(data, max_bytes + 1 - len(out))  # max_length >= 1 (0 would be no limit)
            if len(out) > max_bytes:
                raise TooLarge(f"{name}: decompresses to more than {max_bytes} bytes")
            if not unzip.eof:
                data = unzip.unconsumed_tail or fh.read(CHUNK)
                continue
            complete, data = len(out), unzip.unused_data
            if len(data) < 2:
                data += fh.read(CHUNK)
            if data[:2] != b"\x1f\x8b":  # no other member: what follows is not the page's
                break
            unzip = zlib.decompressobj(31)
    except zlib.error as exc:
        if complete < 0:
            raise CorruptCompression(f"{name}: broken gzip stream ({exc})") from exc
    if complete < 0:
        raise CorruptCompression(f"{name}: broken gzip stream (it ends before the end-of-stream marker)")
    return bytes(out[:complete])


def maybe_gunzip(data: bytes, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Transparently decompress gzip bytes; other bytes pass through."""
    if data[:2] != b"\x1f\x8b":
        return data
    import io

    return gunzip_stream(io.BytesIO(data), max_bytes, "input")
