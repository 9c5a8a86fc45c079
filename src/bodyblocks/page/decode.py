"""Bytes -> text, the first stage: pages lie about their charset, so every guess is checked strictly.

Order (first that succeeds wins):
  1. a byte-order mark (UTF-8, UTF-16, UTF-32); then UTF-16 without one (detect.sniff_utf16: NUL bytes at one
     parity, strictly valid), flagged `Decoded.guessed`;
  2. UTF-8, when the bytes hold multi-byte sequences and are strictly valid UTF-8 — legacy-encoded text
     is almost never valid UTF-8 by chance, and real pages declare gb2312 over UTF-8 bytes (daniel): flagged
     `guessed` when a declaration said otherwise;
  3. each charset declared for the page, decoded strictly: those given by the caller first (the HTTP
     Content-Type of a WARC response), then the page's own (HTTP-equiv / meta charset / XML declaration);
     only the WHATWG Encoding Standard's labels count (LABELS: what browsers honour), read as browsers read
     them (gb2312 as GB18030, latin1 as windows-1252, ...); any other label (cp037, utf-7) is ignored. A
     declaration that decodes is still proved wrong when the detector reads the bytes as another script, one no
     Latin code page gives, and the declared reading is clearly the messier (_proved_wrong);
  4. a declared CJK charset with a few broken bytes replaced, when the rest reads as its script (flagged
     `Decoded.replaced`), rather than a single-byte codec's mojibake of the whole page;
  5. ASCII bytes as they are;
  6. a guess, flagged `guessed` (_guess): the detector's (charset_normalizer, detect.py) where its reading is in
     a CJK script, else GB18030 when the result looks like Chinese text (its quotes, dashes and other GB2312
     symbols count as such; Traditional Chinese in GBK, with fewer of GB2312's everyday characters, when at least
     GBK_COMMON of GBK_MIN_CHARS or more are), else the detector's where it reads as another script no Latin code
     page gives (Cyrillic, Greek, ...; GB18030 instead where that reading is CJK ideographs), else cp1252, else
     the first declared charset with replacement characters (not a guess), else the detector's Latin guess, else
     UTF-8 with replacement characters, reported through `Decoded.replaced`.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Sequence
from pathlib import Path

from bodyblocks.errors import BinaryInput, EmptyInput, NotMarkup, TooLarge
from bodyblocks.page.charsets import LABELS, MULTI_BYTE
from bodyblocks.page.chinese import GBK_COMMON, GBK_MIN_CHARS, is_cjk, looks_chinese, undo_mojibake
from bodyblocks.page.detect import (
    CJK_SCRIPTS,
    WRONG_CHAOS_MARGIN,
    WRONG_COHERENCE_MARGIN,
    Guess,
    detect,
    foreign_script,
    script_of,
    sniff_utf16,
)
from bodyblocks.page.gunzip import gunzip_stream
from bodyblocks.types import Decoded

MAX_INPUT_BYTES = 64 * 1024 * 1024  # refuse anything bigger, compressed or not (decompression bombs)

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


def maybe_gunzip(data: bytes, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Transparently decompress gzip bytes; other bytes pass through."""
    if data[:2] != b"\x1f\x8b":
        return data
    import io

    return gunzip_stream(io.BytesIO(data), max_bytes, "input")


def declared_charsets(data: bytes) -> list[str]:
    """Charsets named in the first 8 KiB (meta charset, http-equiv content, XML declaration)."""
    found: list[str] = []
    for m in _DECLARED.finditer(data[:8192]):
        label = (m.group(1) or m.group(2) or b"").decode("ascii", "ignore").strip().lower()
        if label and label not in found:
            found.append(label)
    return found


def _codec(label: str) -> str | None:
    """Canonical Python codec for a charset label, or None when it is no WHATWG label (LABELS): Python knows many
    codecs no page is written in (cp037, EBCDIC, turns an ASCII page into other letters; utf-7 smuggles markup;
    punycode, base64, rot13 are no charsets), and a browser honours none of them."""
    codec = LABELS.get(label.strip().lower())
    return None if codec is None else codecs.lookup(codec).name




def _strict(data: bytes, codec: str) -> str | None:
    """Decode strictly; a multi-byte character cut off by truncation at the very end is tolerated."""
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and codec in ("utf-8", "gb18030"):
            try:
                return data[: exc.start].decode(codec)
            except UnicodeDecodeError:
                return None
        return None
    except (UnicodeError, LookupError):  # a codec that fails on any input rather than on these bytes
        return None


_CJK_CODECS = ("gb18030", "big5", "big5hkscs")
_CONTROL_BYTES = bytes(b for b in range(32) if b < 9 or 13 < b < 32 and b != 27)  # not in text


def check_binary(data: bytes) -> None:
    """Raise BinaryInput for PDFs, images, archives and other non-text bytes."""
    _check_magic(data)
    _check_controls(data)


def _check_magic(data: bytes) -> None:
    for magic in _BINARY_MAGIC:
        if data.startswith(magic):
            raise BinaryInput(f"binary content (starts with {magic[:4]!r}), not HTML")


def _check_controls(data: bytes) -> None:
    sample = data[:8192]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if sample and controls > 0.05 * len(sample):
        raise BinaryInput(f"binary content ({controls} control bytes in the first {len(sample)})")


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
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            return Decoded(text, codec, "\ufffd" in text, _merged(outside, declared_charsets(data)), bom=True)
    _check_magic(data)
    utf16 = sniff_utf16(data)  # before the control bytes are counted: its NULs would read as binary
    if utf16 is not None:
        return Decoded(utf16[1], utf16[0], False, _merged(outside, declared_charsets(data)), guessed=True)
    _check_controls(data)
    declared = _merged(outside, declared_charsets(data))
    honoured = {c for c in map(_codec, declared) if c is not None}  # what the declarations can be read as
    if not data.isascii():
        text = _strict(data, "utf-8")
        if text is not None:
            fixed = undo_mojibake(text) if honoured & set(_CJK_CODECS) else None
            if fixed is not None:
                return Decoded(fixed, "utf-8(mojibake)->gb18030", "\ufffd" in fixed, declared)
            return Decoded(text, "utf-8", False, declared, guessed=bool(honoured) and "utf-8" not in honoured)
        nearly = _nearly_utf8(data)  # multi-byte UTF-8 but for a few bytes: still UTF-8, replacements flagged
        if nearly is not None:
            return Decoded(nearly, "utf-8", True, declared, guessed=bool(honoured) and "utf-8" not in honoured)
    guesses: list[Guess] | None = None
    for label in declared:
        codec = _codec(label)
        if codec is None or codec.startswith("utf-16") or codec.startswith("utf-32"):
            continue  # a page that says utf-16 without a BOM is ASCII-compatible in practice
        text = _strict(data, codec)
        if text is None or (codec == "gb18030" and not looks_chinese(text)):
            continue
        if data.isascii():
            return Decoded(text, codec, False, declared)
        guesses = detect(data) if guesses is None else guesses
        if not _proved_wrong(data, codec, text, guesses):
            return Decoded(text, codec, False, declared)
    damaged = _declared_cjk_with_replacements(data, declared)
    if damaged is not None:
        return damaged
    if data.isascii():
        return Decoded(data.decode("ascii"), "utf-8", False, declared)
    return _guess(data, declared, detect(data) if guesses is None else guesses)


def _proved_wrong(data: bytes, codec: str, text: str, guesses: list[Guess]) -> bool:
    """Whether a declared charset that decodes strictly is still wrong: the detector reads the bytes in a script
    no Latin code page gives (Russian in cp1251 declared as windows-1252 or in KOI8-R declared as windows-1251,
    Korean in EUC-KR declared as gb2312), and the declared reading is clearly the messier (the detector is not
    trusted between Latin code pages)."""
    if not guesses or guesses[0].codec == codec:
        return False
    top = guesses[0]
    own = next((g for g in guesses if g.codec == codec), None)
    if own is not None and own.chaos < top.chaos + WRONG_CHAOS_MARGIN and (
            own.chaos <= top.chaos or own.coherence + WRONG_COHERENCE_MARGIN > top.coherence):
        return False
    reading = data.decode(top.codec, errors="replace")
    return reading != text and foreign_script(reading)


def _guess(data: bytes, declared: list[str], guesses: list[Guess]) -> Decoded:
    """The charset of non-UTF-8 bytes that no declaration decodes, flagged `guessed`, first that fits:
    the detector's guess where it reads as a CJK script (GB2312's bytes also hold EUC-KR's Hangul); GB18030 when
    the bytes read as Chinese text; the detector's guess where it reads as another script no Latin code page gives
    (but GB18030 where the bytes read strictly as CJK ideographs: an ISO-8859-5 guess of those is mojibake);
    cp1252 (the detector cannot tell Latin code pages apart); the first declared charset with replacement
    characters (not a guess); the detector's Latin guess; UTF-8 with replacement characters."""
    top = guesses[0] if guesses else None
    reading = data.decode(top.codec, errors="replace") if top is not None else ""
    script = script_of(reading)
    if top is not None and top.codec in MULTI_BYTE and script in CJK_SCRIPTS:
        return Decoded(reading, top.codec, "\ufffd" in reading, declared, guessed=True)
    text = _strict(data, "gb18030")
    if text is not None and (looks_chinese(text) or looks_chinese(text, GBK_COMMON, GBK_MIN_CHARS)):
        return Decoded(text, "gb18030", False, declared, guessed=True)
    if top is not None and foreign_script(reading):
        if text is not None and looks_chinese(text, 0.0, GBK_MIN_CHARS):  # Cyrillic, Greek, ... of Chinese bytes
            return Decoded(text, "gb18030", False, declared, guessed=True)
        return Decoded(reading, top.codec, "\ufffd" in reading, declared, guessed=True)
    text = _strict(data, "cp1252")
    if text is not None:
        return Decoded(text, "cp1252", False, declared, guessed=True)
    for label in declared:  # a declared charset, a few bytes replaced, over a Latin code page the detector picked
        codec = _codec(label)
        if codec is not None and not codec.startswith(("utf-16", "utf-32")):
            text = data.decode(codec, errors="replace")
            return Decoded(text, codec, "\ufffd" in text, declared)
    if top is not None:
        return Decoded(reading, top.codec, "\ufffd" in reading, declared, guessed=True)
    return Decoded(data.decode("utf-8", errors="replace"), "utf-8", True, declared, guessed=True)


# A page that declares a CJK charset and fails it strictly on a few broken bytes (a truncated upload, a byte lost
# in transit) is still in that charset: read in it with replacement characters (and flagged `replaced`) when at
# most this share of its non-ASCII characters are replacements and the rest reads as the charset's script, rather
# than as a single-byte codec (cp1252 takes any bytes, and makes mojibake of the whole page)
CJK_DAMAGE_RATIO = 0.02
_SCRIPT_OF = {"gb18030": "zh", "big5hkscs": "zh-hant", "cp932": "ja", "euc_jp": "ja", "iso2022_jp": "ja", "cp949": "ko"}


def _declared_cjk_with_replacements(data: bytes, declared: Sequence[str]) -> Decoded | None:
    """The page in the first CJK charset it declares, a few bad bytes replaced, when it reads as that script."""
    for label in declared:
        codec = _codec(label)
        script = _SCRIPT_OF.get(codec or "")
        if codec is None or script is None:
            continue
        text = data.decode(codec, errors="replace")
        bad = text.count("\ufffd")
        non_ascii = sum(1 for c in text if c > "\x7f")
        if bad and bad <= CJK_DAMAGE_RATIO * non_ascii and _reads_as(text.replace("\ufffd", ""), script):
            return Decoded(text, codec, True, list(declared))
    return None


def _reads_as(text: str, script: str) -> bool:
    """Whether the non-ASCII characters of `text` are mostly of the script (zh: common Chinese, looks_chinese;
    zh-hant: CJK ideographs and punctuation; ja: those and kana; ko: those and Hangul)."""
    if script == "zh":
        return looks_chinese(text)
    non_ascii = [c for c in text if c > "\x7f"]
    if not non_ascii:
        return False
    fits = 0
    for c in non_ascii:
        fits += is_cjk(c) or (script == "ja" and "\u3040" <= c <= "\u30ff") or (
            script == "ko" and ("\uac00" <= c <= "\ud7af" or "\u1100" <= c <= "\u11ff" or "\u3130" <= c <= "\u318f"))
    return fits >= 0.9 * len(non_ascii)


def _merged(first: list[str], then: list[str]) -> list[str]:
    """Charset labels in order, each once."""
    return list(dict.fromkeys([*first, *then]))


# A UTF-8 page with a few bad bytes (a truncated upload, one stray Latin-1 character) is still UTF-8: at most
# this many replacement characters, against at least NEARLY_UTF8_RATIO well-formed non-ASCII characters each.
NEARLY_UTF8_ERRORS = 5
NEARLY_UTF8_RATIO = 4


def _nearly_utf8(data: bytes) -> str | None:
    """The page as UTF-8 with its few undecodable bytes replaced, when that is what it is; else None (a
    single-byte page has hardly any well-formed multi-byte sequence, so it goes on to its own codec)."""
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if not 0 < bad <= NEARLY_UTF8_ERRORS:
        return None
    good = sum(1 for c in text if c > "\x7f" and c != "\ufffd")
    return text if good >= NEARLY_UTF8_RATIO * bad else None


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
