"""Chinese text told from other bytes' misreadings: GB18030 readings that are Chinese (decode.py's guesses) and
UTF-8 pages that are Chinese text misread as cp1252 once or twice (mojibake a declaration of a CJK charset
betrays)."""

from __future__ import annotations


def _utf8(data: bytes) -> str | None:
    """Strict UTF-8, a multi-byte character cut off at the very end tolerated (detect._strict's reading)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:
            try:
                return data[: exc.start].decode("utf-8")
            except UnicodeDecodeError:
                return None
        return None


_CP1252_BYTE = {bytes([b]).decode("cp1252"): b for b in range(128, 256) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def latin_bytes(text: str) -> bytes | None:
    """The bytes a cp1252/latin-1 misreading turned into `text`, or None when it cannot have been one."""
    out = bytearray()
    for c in text:
        o = ord(c)
        if o < 128:
            out.append(o)
        elif c in _CP1252_BYTE:
            out.append(_CP1252_BYTE[c])
        elif o < 256:
            out.append(o)
        else:
            return None
    return bytes(out)


def undo_mojibake(text: str) -> str | None:
    """Chinese text saved as UTF-8 after being misread as cp1252 (once or twice): peel the layers off.

    Only tried on pages that declare a Chinese charset and decode as UTF-8 without a single CJK character.
    """
    if any(is_cjk(c) for c in text) or text.isascii():
        return None
    for _ in range(3):
        raw = latin_bytes(text)
        if raw is None:
            return None
        layer = _utf8(raw)
        if layer is not None and layer != text:
            text = layer  # a UTF-8 misreading: one layer removed
            continue
        # the misreading lost the five bytes cp1252 leaves undefined: tolerate a few replacements
        chinese = raw.decode("gb18030", errors="replace")
        non_ascii = sum(1 for c in chinese if ord(c) > 127)
        lost = chinese.count("\ufffd")
        ok = non_ascii and lost <= 0.03 * non_ascii and looks_chinese(chinese.replace("\ufffd", ""))
        return chinese if ok else None
    return None


def is_cjk(c: str) -> bool:
    """Common CJK ideographs, CJK punctuation and full-width forms."""
    return "\u4e00" <= c <= "\u9fff" or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef"


# GB2312's symbols that Chinese text is written with besides CJK punctuation: quotes, dashes, ellipsis, middle dot,
# numbers in circles, arrows, shapes
_ZH_SYMBOLS = frozenset("·×÷°±§¨¤")


def _zh_symbol(c: str) -> bool:
    return "\u2010" <= c <= "\u266f" or c in _ZH_SYMBOLS


# GB18030 text with fewer of GB2312's everyday characters (Traditional Chinese in GBK: about 60%) is still
# Chinese when at least this share of its non-ASCII characters, and this many, are (Latin-1 misread as GBK: none)
GBK_COMMON = 0.5
GBK_MIN_CHARS = 20


def looks_chinese(text: str, common_share: float = 0.8, min_chars: int = 0) -> bool:
    """True when the non-ASCII characters are mostly CJK or Chinese text's symbols, and at least `common_share`
    of them (and `min_chars`) GB2312's everyday ones (not Latin-1 bytes misread as GBK)."""
    non_ascii = [c for c in text if ord(c) > 127]
    if not non_ascii:
        return True
    if len(non_ascii) < min_chars:
        return False
    cjk = sum(1 for c in non_ascii if is_cjk(c) or _zh_symbol(c))
    if cjk < 0.9 * len(non_ascii):
        return False
    common = 0  # GB2312 (both bytes >= 0xA1) holds the 6,763 everyday characters
    for c in non_ascii[:2000]:
        try:
            b = c.encode("gb2312")
            common += len(b) == 2
        except UnicodeEncodeError:
            pass
    return common >= common_share * min(len(non_ascii), 2000)
