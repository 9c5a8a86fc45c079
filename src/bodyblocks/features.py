"""Blocks -> numbers: structural features, tag-path tokens and hashed character n-grams (NumPy only).

Three inputs of the block classifier are computed here, the same way for training and inference:
  1. `block_features`: one row of FEATURE_NAMES per block (DOM facts from the segmenter, text statistics,
     the block's place in the page), scaled to roughly [0, 1].
  2. `tag_path_tokens` / `tag_bags`: tag names and id/class words of the block's tag path, hashed into a
     fixed number of buckets (an EmbeddingBag in the model).
  3. `ngram_bags`: hashed character n-grams of the block text for the trainable hash encoder
     (1-3-grams inside CJK runs, 3-5-grams of words with boundary markers, whole words), vectorised over a
     whole batch of texts so that it costs microseconds per block.
All hashes are arithmetic on code points or CRC-32 of UTF-8 bytes, so ids are identical across runs and
machines (Python's salted `hash()` is never used).
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Sequence

import numpy as np

from bodyblocks.types import Block

FEATURE_NAMES: tuple[str, ...] = (
    "log_text_len",  # log1p(characters without white space) / 8
    "link_density",  # characters inside <a> / characters
    "punct_density",  # punctuation marks / characters (clipped to 1)
    "log_punct",  # log1p(punctuation marks) / 5
    *(f"h{level}" for level in range(1, 7)),  # heading level of <h1>..<h6>, one-hot
    "is_list_item",  # inside li / dd / dt
    "is_table_cell",  # inside td / th
    "log_sibling_p",  # log1p(<p> children of the block's parent) / 4
    "depth",  # DOM depth / 32 (clipped at 64)
    "rel_depth",  # (depth - the page's median block depth) / 8, clipped to [-2, 2]
    "rel_position",  # index / (blocks - 1): 0 first block, 1 last
    "in_link_only",  # every character is link text
    "log_lines",  # log1p(lines) / 3
    "cjk_share",  # Han / kana / Hangul characters / characters
    "digit_share",  # digits / characters
    "upper_share",  # upper-case letters / letters
    "ends_sentence",  # last character is a sentence end (. ! ? 。 ！ ？ …, or a closing quote)
    "text_share",  # characters / characters of the whole page
    "log_page_blocks",  # log1p(blocks on the page) / 8
)

_SENTENCE_END = set(".!?。！？…\"'”’」』)")


# ----------------------------------------------------------------------------------------- characters
@functools.cache
def _char_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-code-point (BMP) class tables: kind (0 other, 1 word, 2 CJK), upper, alpha, digit."""
    chars = [chr(i) for i in range(0x10000)]
    alnum = np.fromiter((c.isalnum() for c in chars), bool, 0x10000)
    upper = np.fromiter((c.isupper() for c in chars), bool, 0x10000)
    alpha = np.fromiter((c.isalpha() for c in chars), bool, 0x10000)
    digit = np.fromiter((c.isdigit() for c in chars), bool, 0x10000)
    cp = np.arange(0x10000)
    cjk = (
        ((cp >= 0x3040) & (cp <= 0x30FF))  # kana
        | ((cp >= 0x31F0) & (cp <= 0x31FF))
        | ((cp >= 0x3400) & (cp <= 0x4DBF))  # Han extension A
        | ((cp >= 0x4E00) & (cp <= 0x9FFF))  # Han
        | ((cp >= 0xF900) & (cp <= 0xFAFF))
        | ((cp >= 0x1100) & (cp <= 0x11FF))  # Hangul jamo
        | ((cp >= 0xAC00) & (cp <= 0xD7AF))  # Hangul syllables
    )
    kind = np.where(cjk, 2, np.where(alnum, 1, 0)).astype(np.uint8)
    return kind, upper, alpha, digit


def codepoints(text: str) -> np.ndarray:
    """The code points of `text` as uint32 (lone surrogates kept)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def char_kinds(cps: np.ndarray) -> np.ndarray:
    """0 other, 1 word character (letters, digits; not CJK), 2 CJK (Han, kana, Hangul), per code point."""
    kind = _char_tables()[0][np.minimum(cps, 0xFFFF)]
    astral = cps > 0xFFFF
    if astral.any():  # Han extensions B..H are CJK; emoji and the rest count as "other"
        kind = kind.copy()
        kind[astral] = np.where((cps[astral] >= 0x20000) & (cps[astral] <= 0x323AF), 2, 0)
    return kind


def _segment_counts(flags: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Number of True flags in each [start, end) range."""
    cs = np.concatenate(([0], np.cumsum(flags, dtype=np.int64)))
    return cs[ends] - cs[starts]


# ----------------------------------------------------------------------------------------- block features
def _text_stats(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-text character counts (CJK, digits, upper, letters, non-space), vectorised over the page."""
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    ends = np.cumsum(lengths + 1) - 1  # texts joined by one separator
    starts = ends - lengths
    cps = codepoints("\n".join(texts))
    kind_t, upper_t, alpha_t, digit_t = _char_tables()
    bmp = np.minimum(cps, 0xFFFF)
    space = np.isin(cps, (0x20, 0x09, 0x0A, 0x0D, 0xA0, 0x3000))
    return {
        "chars": _segment_counts(~space, starts, ends),
        "cjk": _segment_counts(char_kinds(cps) == 2, starts, ends),
        "digit": _segment_counts(digit_t[bmp] & (cps <= 0xFFFF), starts, ends),
        "upper": _segment_counts(upper_t[bmp] & (kind_t[bmp] == 1), starts, ends),
        "alpha": _segment_counts(alpha_t[bmp] & (kind_t[bmp] == 1), starts, ends),
    }


def block_features(blocks: Sequence[Block]) -> np.ndarray:
    """FEATURE_NAMES for each block of one page (in page order): float32 array (n, len(FEATURE_NAMES))."""
    n = len(blocks)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float32)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    stats = _text_stats([b.text for b in blocks])
    text_len = np.array([b.text_len for b in blocks], dtype=np.float64)
    depth = np.array([b.depth for b in blocks], dtype=np.float64)
    chars = np.maximum(stats["chars"], 1)
    out[:, col["log_text_len"]] = np.log1p(text_len) / 8
    out[:, col["link_density"]] = [min(max(b.link_density, 0.0), 1.0) for b in blocks]
    out[:, col["punct_density"]] = [min(b.punct_density, 1.0) for b in blocks]
    out[:, col["log_punct"]] = np.log1p([b.punct_count for b in blocks]) / 5
    for i, b in enumerate(blocks):
        if 1 <= b.heading_level <= 6:
            out[i, col[f"h{b.heading_level}"]] = 1.0
    out[:, col["is_list_item"]] = [b.is_list_item for b in blocks]
    out[:, col["is_table_cell"]] = [b.is_table_cell for b in blocks]
    out[:, col["log_sibling_p"]] = np.log1p([b.sibling_paragraphs for b in blocks]) / 4
    out[:, col["depth"]] = np.minimum(depth, 64) / 32
    out[:, col["rel_depth"]] = np.clip((depth - np.median(depth)) / 8, -2, 2)
    out[:, col["rel_position"]] = np.arange(n) / max(n - 1, 1)
    out[:, col["in_link_only"]] = [b.in_link_only for b in blocks]
    out[:, col["log_lines"]] = np.log1p([b.text.count("\n") + 1 for b in blocks]) / 3
    out[:, col["cjk_share"]] = stats["cjk"] / chars
    out[:, col["digit_share"]] = stats["digit"] / chars
    out[:, col["upper_share"]] = stats["upper"] / np.maximum(stats["alpha"], 1)
    out[:, col["ends_sentence"]] = [bool(b.text) and b.text.rstrip()[-1:] in _SENTENCE_END for b in blocks]
    out[:, col["text_share"]] = text_len / max(text_len.sum(), 1.0)
    out[:, col["log_page_blocks"]] = np.log1p(n) / 8
    return out


# ----------------------------------------------------------------------------------------- tag paths
_SEGMENT = re.compile(r"([#.])")  # "div#main.article-body" -> "div", "#", "main", ".", "article-body"
_WORDS = re.compile(r"[a-z]+|[A-Z][a-z]*")  # splits on - _ digits and camelCase; digits dropped


# These caches are small on purpose: a page and its site repeat their paths and class names, and a run over
# ever new sites must not grow with them (benchmarks/memory_flat.py: 65,536-entry caches kept growing RSS)
@functools.lru_cache(maxsize=8192)
def _segment_tokens(segment: str) -> tuple[str, ...]:
    """`div#main.articleBody-2` -> ("div", ".main", ".article", ".body") (id and class words share a space).

    Cached: the same segments recur in many tag paths of a page and of a site.
    """
    parts = _SEGMENT.split(segment)
    tokens = [parts[0].lower()] if parts[0] else []
    for name in parts[2::2]:
        tokens.extend("." + w.lower() for w in _WORDS.findall(name))
    return tuple(tokens)


@functools.lru_cache(maxsize=1024)
def tag_path_tokens(tag_path: str, tail: int = 2) -> tuple[str, ...]:
    """Tokens of a tag path such as "html/body/div#main/div.article-body/p".

    Every segment gives its tag name and its id/class words (split on - _ digits and camelCase, digits
    stripped, prefixed "."); the last `tail` segments give the same tokens again prefixed with their
    distance from the end ("1:p", "1:.content", "2:div"), so the block's own element and its parent count
    apart from the ancestors. A leading ".../" (path cut by the segmenter) is ignored.
    """
    segments = _path_segments(tag_path)
    tokens: list[str] = []
    for seg in segments:
        tokens.extend(_segment_tokens(seg))
    for k, seg in _tail(segments, tail):
        tokens.extend(_tail_tokens(seg, k))
    return tuple(tokens)


def _path_segments(tag_path: str) -> list[str]:
    """The segments of a tag path, without empty ones and the "..." of a path cut by the segmenter."""
    return [s for s in tag_path.split("/") if s and s != "..."]


def _tail(segments: list[str], tail: int) -> list[tuple[int, str]]:
    """(distance from the end, segment) of the last `tail` segments, innermost first."""
    return list(enumerate(reversed(segments[-tail:] if tail else []), start=1))


def _tail_tokens(segment: str, k: int) -> tuple[str, ...]:
    """A segment's tokens prefixed with its distance from the end of the path ("1:p", "2:.main")."""
    return tuple(f"{k}:{t}" for t in _segment_tokens(segment))


@functools.lru_cache(maxsize=32768)
def hash_token(token: str, buckets: int) -> int:
    """Stable bucket of a token: CRC-32 of its UTF-8 bytes modulo `buckets`."""
    return zlib.crc32(token.encode("utf-8", "surrogatepass")) % buckets


@functools.lru_cache(maxsize=16384)
def _segment_ids(segment: str, buckets: int, k: int = 0) -> tuple[int, ...]:
    """Bucket ids of one path segment's tokens, prefixed "k:" when k > 0 (see `tag_path_tokens`)."""
    return tuple(hash_token(t, buckets) for t in (_tail_tokens(segment, k) if k else _segment_tokens(segment)))


@functools.lru_cache(maxsize=8192)
def _path_ids(tag_path: str, buckets: int) -> tuple[int, ...]:
    """Ids of every segment of a path in order, from the ids of its parent path (cached: the paths of a
    page share their prefixes, so each new path costs one segment)."""
    head, _, last = tag_path.rpartition("/")
    own = _segment_ids(last, buckets) if last and last != "..." else ()
    return (_path_ids(head, buckets) if head else ()) + own


@functools.lru_cache(maxsize=8192)
def _tag_path_ids(tag_path: str, buckets: int, tail: int = 2) -> np.ndarray:
    """Bucket ids of `tag_path_tokens(tag_path, tail)` (cached: a page repeats a handful of paths)."""
    ids = list(_path_ids(tag_path, buckets))
    for k, seg in _tail(_path_segments(tag_path), tail):
        ids.extend(_segment_ids(seg, buckets, k))
    return np.array(ids, dtype=np.int64)


def tag_bags(blocks: Sequence[Block], buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Tag-path token ids of every block as EmbeddingBag input: (ids (m,), offsets (n,)) int64."""
    parts = [_tag_path_ids(b.tag_path, buckets) for b in blocks]
    lengths = np.fromiter((len(p) for p in parts), np.int64, len(parts))
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])) if parts else np.zeros(0, np.int64)
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return ids.astype(np.int64), offsets.astype(np.int64)


# ----------------------------------------------------------------------------------------- text n-grams
_P = 0x100000001B3  # FNV-64 prime: odd, so invertible modulo 2**64
_P_INV = pow(_P, -1, 1 << 64)
_LATIN_N = (3, 4, 5)  # character n-grams of words, boundary markers included
_CJK_N = (1, 2, 3)  # character n-grams inside CJK runs
_WORD, _LATIN, _CJK = 1, 2, 3  # salts that keep the three kinds of n-gram apart


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: spreads polynomial hashes over all 64 bits."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


class _Substrings:
    """O(1) polynomial hash of any substring of a code-point array: sum c[a+k] * P**k (mod 2**64)."""

    def __init__(self, cps: np.ndarray) -> None:
        # every array stays uint64 (wrapping arithmetic): mixing in int64 would promote to float64
        n, one, zero = len(cps), np.ones(1, np.uint64), np.zeros(1, np.uint64)
        powers = np.concatenate((one, np.cumprod(np.full(n, _P, dtype=np.uint64))))
        self.inv = np.concatenate((one, np.cumprod(np.full(n, _P_INV, dtype=np.uint64))))
        self.prefix = np.concatenate((zero, np.cumsum(cps.astype(np.uint64) * powers[:n])))

    def hash(self, start: np.ndarray, length: np.ndarray | int, kind: int) -> np.ndarray:
        """Hashes of substrings [start, start + length), salted by kind and length."""
        h = (self.prefix[start + length] - self.prefix[start]) * self.inv[start]
        salt = np.uint64(kind * 0x9E3779B97F4A7C15 % (1 << 64)) + np.asarray(length, np.uint64)
        return _mix(h ^ salt)


def ngram_bags(texts: Sequence[str], buckets: int, max_chars: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Hashed n-gram ids of each text as EmbeddingBag input: (ids (m,), offsets (len(texts),)) int64.

    Texts are lower-cased, cut to `max_chars` and digits folded to "0". Per text: every word (a run of
    letters/digits outside CJK) as a whole; its character 3-, 4- and 5-grams with a boundary marker at
    each end (so "<th", "he>" differ from an inner "the"); and 1-, 2-, 3-grams inside runs of CJK
    characters. A text with none of these gets an empty bag (a zero vector).
    """
    clipped = [t[:max_chars].lower() for t in texts]
    lengths = np.fromiter((len(t) for t in clipped), np.int64, len(clipped))
    starts = np.concatenate(([1], np.cumsum(lengths + 1)[:-1] + 1)) if len(texts) else lengths
    cps = codepoints("\n" + "\n".join(clipped) + "\n").copy()  # separators = word boundaries
    kind = char_kinds(cps)
    cps[(cps >= 0x30) & (cps <= 0x39)] = 0x30
    word, cjk = kind == 1, kind == 2
    marked = np.where(word, cps, 0)  # non-word characters become the boundary marker 0
    cw = np.concatenate(([0], np.cumsum(word, dtype=np.int64)))
    cc = np.concatenate(([0], np.cumsum(cjk, dtype=np.int64)))
    latin, kanji = _Substrings(marked), _Substrings(cps)
    ids, owners = [], []
    # 1. whole words
    first = np.flatnonzero(word & ~np.concatenate(([False], word[:-1])))
    last = np.flatnonzero(word & ~np.concatenate((word[1:], [False])))
    ids.append(latin.hash(first, last + 1 - first, _WORD))
    owners.append(first)
    # 2. word n-grams: the inner n - 2 characters are word characters, the ends may be markers
    for n in _LATIN_N:
        i = np.arange(max(len(cps) - n + 1, 0))
        i = i[cw[i + n - 1] - cw[i + 1] == n - 2]
        ids.append(latin.hash(i, n, _LATIN * 8 + n))
        owners.append(i + 1)
    # 3. CJK n-grams
    for n in _CJK_N:
        i = np.arange(max(len(cps) - n + 1, 0))
        i = i[cc[i + n] - cc[i] == n]
        ids.append(kanji.hash(i, n, _CJK * 8 + n))
        owners.append(i)
    text_of = np.searchsorted(starts, np.concatenate(owners), side="right") - 1
    order = np.argsort(text_of, kind="stable")
    all_ids = (np.concatenate(ids) % np.uint64(buckets)).astype(np.int64)[order]
    counts = np.bincount(text_of, minlength=len(texts))
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return all_ids, offsets[: len(texts)]
