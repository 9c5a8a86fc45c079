"""What a page's bytes say of themselves, read before any charset is tried (decode.py's step 1): a byte-order
mark, the magic number of a binary format, UTF-16 written without a BOM, control bytes no text holds, and the
charsets the page declares in its first 8 KiB.

    decoded, declared = sniff(data, outside)   # a Decoded when the bytes settle it, else the labels to try

A page that none of these settles goes on to detect.read_charset with the declared labels.
"""

from __future__ import annotations

import codecs
import re

from bodyblocks.errors import BinaryInput
from bodyblocks.types import Decoded

_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]
_BINARY_MAGIC = [
    b"%PDF", b"\x89PNG", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"PK\x03\x04", b"RIFF", b"\x00\x00\x01\x00",
]
_DECLARED = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([a-zA-Z0-9_.:-]+)""",
    re.IGNORECASE,
)
_CONTROL_BYTES = bytes(b for b in range(32) if b < 9 or 13 < b < 32 and b != 27)  # not in text


def sniff(data: bytes, outside: list[str]) -> tuple[Decoded | None, list[str]]:
    """(the page decoded, []) when a BOM or UTF-16 without one settles its charset, else (None, the charset labels
    declared for it: `outside`, those from outside the page, first, then its own, each once). Raises BinaryInput
    for bytes that are no text (binary magic, or control bytes once UTF-16 is ruled out)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            return Decoded(text, codec, "\ufffd" in text, _merged(outside, declared_charsets(data)), bom=True), []
    _check_magic(data)
    utf16 = sniff_utf16(data)  # before the control bytes are counted: its NULs would read as binary
    if utf16 is not None:
        return Decoded(utf16[1], utf16[0], False, _merged(outside, declared_charsets(data)), guessed=True), []
    _check_controls(data)
    return None, _merged(outside, declared_charsets(data))


def declared_charsets(data: bytes) -> list[str]:
    """Charsets named in the first 8 KiB (meta charset, http-equiv content, XML declaration)."""
    found: list[str] = []
    for m in _DECLARED.finditer(data[:8192]):
        label = (m.group(1) or m.group(2) or b"").decode("ascii", "ignore").strip().lower()
        if label and label not in found:
            found.append(label)
    return found


def _merged(first: list[str], then: list[str]) -> list[str]:
    """Charset labels in order, each once."""
    return list(dict.fromkeys([*first, *then]))


def _check_magic(data: bytes) -> None:
    """BinaryInput for PDFs, images, archives and other formats known by their first bytes."""
    for magic in _BINARY_MAGIC:
        if data.startswith(magic):
            raise BinaryInput(f"binary content (starts with {magic[:4]!r}), not HTML")


def _check_controls(data: bytes) -> None:
    """BinaryInput for bytes whose first 8 KiB hold more control bytes than text does."""
    sample = data[:8192]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if sample and controls > 0.05 * len(sample):
        raise BinaryInput(f"binary content ({controls} control bytes in the first {len(sample)})")


# UTF-16 without a byte-order mark: markup is ASCII, so one byte of its pairs is NUL at least this often (with
# text in any script), while the other byte of the pairs is NUL at most UTF16_OTHER_NULS of the time; text in
# a single-byte charset or UTF-8 holds no NUL at all
UTF16_NULS = 0.05
UTF16_OTHER_NULS = 0.01
_UTF16_CONTROLS = frozenset(chr(c) for c in range(32)) - {"\t", "\n", "\r", "\f"}


def sniff_utf16(data: bytes) -> tuple[str, str] | None:
    """(codec, text) for UTF-16 written without a BOM: NUL bytes at one parity, strictly valid, a tag in its
    first 4 KiB and hardly a control character."""
    sample = data[:8192]
    pairs = len(sample) // 2
    if pairs < 16:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    for codec, zeros, other in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if zeros >= UTF16_NULS * pairs and other <= UTF16_OTHER_NULS * pairs:
            try:
                text = data[: len(data) // 2 * 2].decode(codec)
            except UnicodeDecodeError:
                return None
            head = text[:4096]
            controls = sum(1 for c in head if c in _UTF16_CONTROLS)
            if re.search(r"<[A-Za-z!/?]", head) and controls <= 0.01 * len(head):
                return codec, text
            return None
    return None
