"""Bytes -> text once the bytes settle nothing themselves (sniff.py): the charsets declared for the page tried
strictly against UTF-8 and the detector, then a guess (decode.py's steps 2-6).

    decoded = read_charset(data, declared)   # declared: sniff's labels, those from outside the page first

The detector (charset_normalizer's language-aware guess, kept to the web's charsets, WHATWG_CODECS) is sure of
scripts, not of code pages within one: on Latin-script text it names cp775 or cp1250 for a French page as readily
as cp1252, so its guess is taken only where it reads as another script (Cyrillic, Greek, Hangul, kana, ...) than
the one Latin code pages would give.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass

from bodyblocks.page.charsets import LABELS, MULTI_BYTE, WHATWG_CODECS
from bodyblocks.page.chinese import GBK_COMMON, GBK_MIN_CHARS, is_cjk, looks_chinese, undo_mojibake
from bodyblocks.types import Decoded

DETECT_BYTES = 200_000  # the detector reads this much of a page (it samples chunks of it)
# a declaration is proved wrong when the detector reads a script of its own and the declared reading is at least
# this much more chaotic (charset_normalizer's mess ratio; a codec missing from its results is above its 0.2
# threshold), or more chaotic at all and this much less coherent (KOI8-R read as cp1251: Cyrillic, cases swapped)
WRONG_CHAOS_MARGIN = 0.1
WRONG_COHERENCE_MARGIN = 0.2
SCRIPT_MIN_LETTERS = 20  # fewer non-ASCII letters than this: no script is told from them

# names the detector gives that are not Python's names of a WHATWG encoding's codec, with the codec browsers use
_ALIASES = {"latin_1": "cp1252", "iso8859_1": "cp1252", "ascii": "utf-8", "euc_jis_2004": "euc_jp",
            "euc_jisx0213": "euc_jp", "shift_jis": "cp932", "shift_jis_2004": "cp932", "shift_jisx0213": "cp932",
            "big5": "big5hkscs", "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949", "johab": "cp949"}

# (first, last code point, script) of the scripts a legacy charset can hold besides Latin
_SCRIPTS = ((0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"), (0x0590, 0x05FF, "hebrew"),
            (0x0600, 0x06FF, "arabic"), (0x0E00, 0x0E7F, "thai"), (0x1100, 0x11FF, "hangul"),
            (0x3040, 0x30FF, "kana"), (0x3400, 0x9FFF, "han"), (0xAC00, 0xD7AF, "hangul"),
            (0xF900, 0xFAFF, "han"), (0xFF61, 0xFF9F, "halfwidth"))
CJK_SCRIPTS = frozenset({"hangul", "kana", "han"})


@dataclass(frozen=True)
class Guess:
    codec: str  # a Python codec of a WHATWG encoding
    chaos: float  # charset_normalizer's mess ratio of the reading (0: clean)
    coherence: float  # how well the reading's letters fit a language's frequencies (1: best)


def read_charset(data: bytes, declared: list[str]) -> Decoded:
    """The page's text from the charsets `declared` for it (strictly, each proved right or wrong by the detector),
    UTF-8, ASCII, or a guess flagged `guessed` (decode.py's steps 2-6)."""
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


def whatwg_codec(name: str) -> str | None:
    """The WHATWG encoding's Python codec for a detector's encoding name, or None when it is none of the web's."""
    name = _ALIASES.get(name, name)
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    return codec if codec in WHATWG_CODECS else None


def detect(data: bytes) -> list[Guess]:
    """The detector's readings of `data` among the WHATWG encodings, best first. It ignores what the page
    declares (preemptive_behaviour=False): the declaration is what it is asked to check."""
    from charset_normalizer import from_bytes

    guesses: dict[str, Guess] = {}
    for match in from_bytes(data[:DETECT_BYTES], preemptive_behaviour=False):
        for name in (match.encoding, *match.could_be_from_charset):
            codec = whatwg_codec(name)
            if codec is not None and codec not in guesses:
                guesses[codec] = Guess(codec, match.chaos, match.coherence)
    return list(guesses.values())


def script_of(text: str) -> str | None:
    """The script most of the non-ASCII letters of `text` are in ("latin", "cyrillic", "han", ...), or None
    when there are fewer than SCRIPT_MIN_LETTERS of them."""
    counts: dict[str, int] = {}
    letters = 0
    for c in text:
        if c < "\x80" or not c.isalpha():
            continue
        letters += 1
        o = ord(c)
        name = "latin" if o < 0x0250 or 0x1E00 <= o <= 0x1EFF else "other"
        for first, last, script in _SCRIPTS:
            if first <= o <= last:
                name = script
                break
        counts[name] = counts.get(name, 0) + 1
    if letters < SCRIPT_MIN_LETTERS:
        return None
    best = max(counts, key=lambda k: counts[k])
    if best in ("kana", "han") and counts.get("kana", 0) >= 0.05 * letters:
        return "kana"  # Japanese: kanji with kana among them
    return best


def foreign_script(text: str) -> bool:
    """Whether a reading is in a script that no Latin code page makes of bytes (a guess of it is evidence)."""
    return script_of(text) not in (None, "latin", "other", "halfwidth")
