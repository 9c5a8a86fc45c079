"""What decode.py falls back on when no strict attempt settles a page's charset: charset_normalizer's
language-aware guess, kept to the web's charsets (WHATWG_CODECS), the script a reading is written in (which decides
how far a guess is trusted), and UTF-16 written without a byte-order mark.

The detector is sure of scripts, not of code pages within one: on Latin-script text it names cp775 or cp1250 for a
French page as readily as cp1252, so decode.py takes its guess only where the guess reads as another script
(Cyrillic, Greek, Hangul, kana, ...) than the one Latin code pages would give.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from bodyblocks.page.charsets import WHATWG_CODECS

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
