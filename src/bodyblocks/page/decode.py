"""Bytes -> text, the first stage: pages lie about their charset, so every guess is checked strictly.

Gzip bytes are decompressed first (gunzip.py). Then, in the order of the data's flow, first that succeeds wins:
  1. what the bytes say of themselves (sniff.py): a byte-order mark (UTF-8, UTF-16, UTF-32); binary content
     refused; UTF-16 without a BOM (NUL bytes at one parity, strictly valid), flagged `Decoded.guessed`; the
     charsets the page declares;
  steps 2-6 read the charset from the declarations, UTF-8 and the detector (detect.read_charset):
  2. UTF-8, when the bytes hold multi-byte sequences and are strictly valid UTF-8 — legacy-encoded text
     is almost never valid UTF-8 by chance, and real pages declare gb2312 over UTF-8 bytes (daniel): flagged
     `guessed` when a declaration said otherwise;
  3. each charset declared for the page, decoded strictly: those given by the caller first (the HTTP
     Content-Type of a WARC response), then the page's own (HTTP-equiv / meta charset / XML declaration);
     only the WHATWG Encoding Standard's labels count (LABELS: what browsers honour), read as browsers read
     them (gb2312 as GB18030, latin1 as windows-1252, ...); any other label (cp037, utf-7) is ignored. A
     declaration that decodes is still proved wrong when the detector reads the bytes as another script, one no
     Latin code page gives, and the declared reading is clearly the messier (detect._proved_wrong);
  4. a declared CJK charset with a few broken bytes replaced, when the rest reads as its script (flagged
     `Decoded.replaced`), rather than a single-byte codec's mojibake of the whole page;
  5. ASCII bytes as they are;
  6. a guess, flagged `guessed` (detect._guess): the detector's (charset_normalizer) where its reading is in
     a CJK script, else GB18030 when the result looks like Chinese text (its quotes, dashes and other GB2312
     symbols count as such; Traditional Chinese in GBK, with fewer of GB2312's everyday characters, when at least
     GBK_COMMON of GBK_MIN_CHARS or more are), else the detector's where it reads as another script no Latin code
     page gives (Cyrillic, Greek, ...; GB18030 instead where that reading is CJK ideographs), else cp1252, else
     the first declared charset with replacement characters (not a guess), else the detector's Latin guess, else
     UTF-8 with replacement characters, reported through `Decoded.replaced`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from bodyblocks.errors import EmptyInput, NotMarkup, TooLarge
from bodyblocks.page.detect import read_charset
from bodyblocks.page.gunzip import MAX_INPUT_BYTES, gunzip_stream, maybe_gunzip
from bodyblocks.page.sniff import sniff
from bodyblocks.types import Decoded


def read_bytes(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Read a page file (.html, .htm, .html.gz or gzip bytes under any name), bounded in size."""
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head == b"\x1f\x8b":
            return gunzip_stream(fh, max_bytes, str(p))
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(f"{p}: larger than {max_bytes} bytes")
    return data


def decode_bytes(data: bytes, declared: Sequence[str] = ()) -> Decoded:
    """Decode page bytes to text, reporting the codec used, whether replacement was needed and whether the
    codec is a guess (`Decoded.guessed`: neither a BOM, nor a declaration that held, nor UTF-8 or ASCII
    bytes that nothing contradicts).

    `declared`: charset labels declared for the page from outside it (the HTTP Content-Type's charset),
    tried strictly before those the page declares itself, as the HTML standard ranks them.
    """
    data = maybe_gunzip(data)
    outside = [label.strip().lower() for label in declared if label and label.strip()]
    if not data.strip():
        raise EmptyInput("empty page")
    decoded, labels = sniff(data, outside)
    return decoded if decoded is not None else read_charset(data, labels)


def page_source(page: str | bytes | os.PathLike[str]) -> str | bytes:
    """What the API's `extract(page)` was given, as HTML text or bytes: bytes and markup as they are, a
    path-like (pathlib.Path) read with read_bytes (gzip too).

    A str that holds no markup and names a file or folder, or looks like a path (one line, no space, ending in
    a page's suffix or holding a "/"), is refused with NotMarkup: it was meant as a path, and extracting the
    name as if it were the page would answer with the name. A path-like to a folder is an IsADirectoryError
    that says what to do with a folder.
    """
    if isinstance(page, os.PathLike):
        if os.path.isdir(page):
            raise IsADirectoryError(f"{os.fspath(page)!r} is a folder, not a page: extract its pages with "
                                    f"`bodyblocks extract {os.fspath(page)} --out OUT`, or pass one file's path")
        return read_bytes(page)
    if isinstance(page, str) and "<" not in page and len(page) < 4096 and "\n" not in page:
        _refuse_a_path(page)
    if not isinstance(page, str | bytes | bytearray | memoryview):
        raise TypeError(f"a page is HTML as str or bytes, or a path-like; got {type(page).__name__}")
    return bytes(page) if isinstance(page, bytearray | memoryview) else page


_PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".gz", ".php", ".asp", ".aspx", ".jsp", ".txt", ".xml")


def _refuse_a_path(text: str) -> None:
    """NotMarkup for a str without markup that names a file or folder or looks like a path (page_source)."""
    name = text.strip()
    try:
        is_file, is_dir = os.path.isfile(name), os.path.isdir(name)
    except (OSError, ValueError):  # NUL bytes, names too long
        is_file = is_dir = False
    if is_file:
        raise NotMarkup(f"{name!r} is a file name, not HTML: pass pathlib.Path({name!r}) or the file's bytes")
    if is_dir:
        raise NotMarkup(f"{name!r} is a folder, not HTML: extract its pages with `bodyblocks extract {name} --out "
                        "OUT`, or pass one file as pathlib.Path")
    if name.startswith(("http://", "https://")) and " " not in name:
        raise NotMarkup(f"{name!r} is an address, not HTML: fetch the page first (a file of URLs to `bodyblocks "
                        "extract`, or `bodyblocks capture`) and pass its HTML, bytes or pathlib.Path; url= takes "
                        "the address")
    if name and " " not in name and (name.lower().endswith(_PAGE_SUFFIXES) or "/" in name or "\\" in name):
        raise NotMarkup(f"{name!r} looks like a file name, not HTML, and there is no such file here ({os.getcwd()}): "
                        "pass the page's HTML (a str with its markup, or bytes), or pathlib.Path to a file that exists")


def to_text(html: str | bytes, declared: Sequence[str] = ()) -> Decoded:
    """Accept either already-decoded text or raw bytes (`declared`: decode_bytes')."""
    if isinstance(html, str):
        if not html.strip():
            raise EmptyInput("empty page")
        if not html.isascii() and _SURROGATE.search(html):
            # a str decoded with "surrogateescape" (or built by hand): libxml2 cannot take a surrogate and stopped
            # reading the page there; a pair is joined into its character, a lone one becomes U+FFFD (as an
            # undecodable byte does)
            text = html.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
            return Decoded(text, "str", "\ufffd" in text)
        return Decoded(html, "str", "\ufffd" in html)
    return decode_bytes(html, declared)


_SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates: a str can hold them, no UTF can encode them
_LANG_ATTR = re.compile(rb"<html\b[^>]*?\s(?:xml:)?lang\s*=\s*[\"']?\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9-]*)?",
                        re.IGNORECASE)
_LANG_META = re.compile(rb"<meta[^>]+http-equiv\s*=\s*[\"']?content-language[\"']?[^>]*content\s*=\s*[\"']?\s*"
                        rb"([A-Za-z]{2,3})\b", re.IGNORECASE)
_LANG_CODE = re.compile(r"\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9-]*)?\s*(?:[,;]|$)")


def declared_language(page: str | bytes, header: str | None = None) -> str | None:
    """The language a page declares, as a lower-case ISO 639 code ("zh" for "zh-CN"): the HTTP
    Content-Language `header` (its first tag), else `<html lang>`, else a content-language meta tag in the
    first 64 KiB; None when it declares none. What the page says, not a guess from its text."""
    if header:
        m = _LANG_CODE.match(header)
        if m:
            return m.group(1).lower()
    head = page[:65536]
    raw = head.encode("utf-8", "replace") if isinstance(head, str) else head
    m = _LANG_ATTR.search(raw) or _LANG_META.search(raw)
    return m.group(1).decode("ascii").lower() if m else None
