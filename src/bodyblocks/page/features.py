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
import operator
import re
import zlib
from collections.abc import Callable, Sequence

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
def _bmp() -> str:
    """Every BMP code point in order, as one string (lone surrogates included)."""
    return "".join(map(chr, range(0x10000)))


def _bmp_table(test: Callable[[str], bool]) -> np.ndarray:
    """test(chr(i)) for every BMP code point i, as a bool array (built in C: a worker's first page paid ~20 ms
    for the generator expressions this replaces)."""
    return np.frombuffer(bytes(map(test, _bmp())), dtype=np.bool_)


@functools.cache
def _char_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-code-point (BMP) class tables: kind (0 other, 1 word, 2 CJK), upper, alpha, digit."""
    alnum, upper, alpha, digit = (_bmp_table(test) for test in (str.isalnum, str.isupper, str.isalpha, str.isdigit))
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
    kind = _char_tables()[0].take(np.minimum(cps, 0xFFFF))
    astral = cps > 0xFFFF
    if astral.any():  # Han extensions B..H are CJK; emoji and the rest count as "other"
        kind[astral] = np.where((cps[astral] >= 0x20000) & (cps[astral] <= 0x323AF), 2, 0)
    return kind


# ----------------------------------------------------------------------------------------- block features
# bits of _class_table: the character classes block_features looks for in the texts
_NON_SPACE, _CJK_BIT, _DIGIT, _UPPER, _ALPHA, _NEWLINE, _WHITE, _END = 1, 2, 4, 8, 16, 32, 64, 128
_SPACES = (0x20, 0x09, 0x0A, 0x0D, 0xA0, 0x3000)  # white space not counted in a text's characters


@functools.cache
def _class_table() -> np.ndarray:
    """Per BMP code point, the bits of its classes: not one of _SPACES; CJK (char_kinds 2); a digit; an upper-case
    letter and a letter (str.isupper, str.isalpha) among the word characters (char_kinds 1); a newline; white
    space to str.rstrip; one of _SENTENCE_END. An astral code point is looked up as U+FFFF (a character of none
    of these but the first) and given its CJK bit apart."""
    kind, upper, alpha, digit = _char_tables()
    white = _bmp_table(str.isspace)
    bits = np.full(0x10000, _NON_SPACE, dtype=np.uint8)
    bits[list(_SPACES)] = 0
    for bit, where in ((_CJK_BIT, kind == 2), (_DIGIT, digit), (_UPPER, upper & (kind == 1)),
                       (_ALPHA, alpha & (kind == 1)), (_WHITE, white)):
        bits[where] |= bit
    bits[0x0A] |= _NEWLINE
    bits[[ord(c) for c in _SENTENCE_END]] |= _END
    return bits


def _text_stats(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-text character counts (non-space, CJK, digits, upper, letters, lines: newlines + 1) and whether the
    text ends a sentence (its last character before trailing white space is one of _SENTENCE_END), vectorised
    over the page.

    The texts are joined, each followed by one "\n", and every count is one np.add.reduceat over the ranges
    text + its separator (never empty): the separator adds one newline, and nothing else, to its text's counts.
    """
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    starts = np.cumsum(lengths + 1) - (lengths + 1)
    cps = codepoints("\n".join(texts) + "\n")
    bits = _class_table().take(np.minimum(cps, 0xFFFF))
    if cps.max() > 0xFFFF:  # Han extensions B..H are CJK, as in char_kinds
        bits[(cps >= 0x20000) & (cps <= 0x323AF)] |= _CJK_BIT

    def count(bit: int) -> np.ndarray:
        return np.add.reduceat((bits & bit) != 0, starts, dtype=np.int64)

    solid = np.flatnonzero((bits & _WHITE) == 0)  # every separator is white space
    before = np.searchsorted(solid, starts + lengths) - 1  # the last solid character before each text's end
    last = solid.take(before, mode="clip") if len(solid) else starts
    ends = (before >= 0) & (last >= starts) & ((bits.take(last) & _END) != 0)
    return {"chars": count(_NON_SPACE), "cjk": count(_CJK_BIT), "digit": count(_DIGIT),
            "upper": count(_UPPER), "alpha": count(_ALPHA), "lines": count(_NEWLINE), "ends_sentence": ends}


def _median(values: np.ndarray) -> float:
    """np.median of a non-empty float64 array without NaN (the mean of the two middle values for an even count)."""
    n = len(values)
    middle = np.partition(values, ((n - 1) // 2, n // 2))
    return (middle[(n - 1) // 2] + middle[n // 2]) / 2


# the Block fields block_features reads, each as a float64 array (read field by field: a tuple per block
# would be a new object for the garbage collector to track, a float or an int is none)
_BLOCK_FIELDS = {name: operator.attrgetter(name) for name in (
    "text_len", "depth", "link_density", "punct_density", "punct_count", "heading_level", "is_list_item",
    "is_table_cell", "sibling_paragraphs", "in_link_only")}
_TEXT = operator.attrgetter("text")


def block_features(blocks: Sequence[Block]) -> np.ndarray:
    """FEATURE_NAMES for each block of one page (in page order): float32 array (n, len(FEATURE_NAMES))."""
    n = len(blocks)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float32)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    stats = _text_stats(list(map(_TEXT, blocks)))
    fields = {name: np.fromiter(map(get, blocks), np.float64, n) for name, get in _BLOCK_FIELDS.items()}
    text_len, depth = fields["text_len"], fields["depth"]
    chars = np.maximum(stats["chars"], 1)
    out[:, col["log_text_len"]] = np.log1p(text_len) / 8
    out[:, col["link_density"]] = np.minimum(np.maximum(fields["link_density"], 0.0), 1.0)
    out[:, col["punct_density"]] = np.minimum(fields["punct_density"], 1.0)
    out[:, col["log_punct"]] = np.log1p(fields["punct_count"]) / 5
    level = fields["heading_level"].astype(np.int64)
    heading = np.flatnonzero((level >= 1) & (level <= 6))
    out[heading, col["h1"] + level[heading] - 1] = 1.0
    out[:, col["is_list_item"]] = fields["is_list_item"]
    out[:, col["is_table_cell"]] = fields["is_table_cell"]
    out[:, col["log_sibling_p"]] = np.log1p(fields["sibling_paragraphs"]) / 4
    out[:, col["depth"]] = np.minimum(depth, 64) / 32
    out[:, col["rel_depth"]] = np.clip((depth - _median(depth)) / 8, -2, 2)
    out[:, col["rel_position"]] = np.arange(n) / max(n - 1, 1)
    out[:, col["in_link_only"]] = fields["in_link_only"]
    out[:, col["log_lines"]] = np.log1p(stats["lines"]) / 3
    out[:, col["cjk_share"]] = stats["cjk"] / chars
    out[:, col["digit_share"]] = stats["digit"] / chars
    out[:, col["upper_share"]] = stats["upper"] / np.maximum(stats["alpha"], 1)
    out[:, col["ends_sentence"]] = stats["ends_sentence"]
    out[:, col["text_share"]] = text_len / max(text_len.sum(), 1.0)
    out[:, col["log_page_blocks"]] = np.log1p(n) / 8
    return out


# ----------------------------------------------------------------------------------------- groups
GROUP_NAMES: tuple[str, ...] = (
    "group:log_size",  # log1p(blocks of the page with this tag path) / 4
    "group:text_share",  # their characters / the page's
    "group:link_density",  # their link characters / their characters
    "group:log_mean_len",  # log1p(their mean characters) / 8
    "group:spread",  # (last index - first index) of the group / (blocks - 1)
    "page:link_density",  # the page's link characters / its characters
)


def group_features(blocks: Sequence[Block]) -> np.ndarray:
    """GROUP_NAMES of each block of one page: (n, len(GROUP_NAMES)) float64: the trees' columns with gbt.groups
    (classify/trees.py's module docstring, item 4) and the model's with model.groups (model_inputs.prepare_page)."""
    n = len(blocks)
    out = np.zeros((n, len(GROUP_NAMES)))
    if n == 0:
        return out
    ids: dict[str, int] = {}
    group = np.fromiter((ids.setdefault(b.tag_path, len(ids)) for b in blocks), np.int64, n)
    text = np.fromiter((b.text_len for b in blocks), np.float64, n)
    links = np.fromiter((b.link_len for b in blocks), np.float64, n)
    g = len(ids)
    size = np.bincount(group, minlength=g).astype(np.float64)
    g_text = np.bincount(group, text, minlength=g)
    g_links = np.bincount(group, links, minlength=g)
    index = np.arange(n)
    first = np.full(g, n, np.int64)
    np.minimum.at(first, group, index)
    last = np.zeros(g, np.int64)
    np.maximum.at(last, group, index)
    total = max(float(text.sum()), 1.0)
    out[:, 0] = np.log1p(size[group]) / 4
    out[:, 1] = g_text[group] / total
    out[:, 2] = np.minimum(g_links[group] / np.maximum(g_text[group], 1.0), 1.0)
    out[:, 3] = np.log1p(g_text[group] / size[group]) / 8
    out[:, 4] = (last - first)[group] / max(n - 1, 1)
    out[:, 5] = min(float(links.sum()) / total, 1.0)
    return out


# ----------------------------------------------------------------------------------------- tag paths
_TAG = re.compile(r"[^#.]*")  # "div#main.article-body" -> "div", then the id and class names
_WORDS = re.compile(r"[a-z]+|[A-Z][a-z]*")  # splits on - _ digits and camelCase; digits dropped
TAIL = 2  # the last segments of a tag path whose tokens count again with their distance from the end


# These caches are small on purpose: a page and its site repeat their paths and class names, and a run over
# ever new sites must not grow with them (benchmarks/memory_flat.py: 65,536-entry caches kept growing RSS)
@functools.lru_cache(maxsize=8192)
def segment_tokens(segment: str) -> tuple[str, ...]:
    """`div#main.articleBody-2` -> ("div", ".main", ".article", ".body") (id and class words share a space).

    Cached: the same segments recur in many tag paths of a page and of a site.
    """
    tag = _TAG.match(segment).group()  # type: ignore[union-attr]  # (matches every string)
    words = ["." + w.lower() for w in _WORDS.findall(segment, len(tag))]  # those of every id and class name
    return (tag.lower(), *words) if tag else tuple(words)


@functools.lru_cache(maxsize=1024)
def tag_path_tokens(tag_path: str, tail: int = TAIL) -> tuple[str, ...]:
    """Tokens of a tag path such as "html/body/div#main/div.article-body/p".

    Every segment gives its tag name and its id/class words (split on - _ digits and camelCase, digits
    stripped, prefixed "."); the last `tail` segments give the same tokens again prefixed with their
    distance from the end ("1:p", "1:.content", "2:div"), so the block's own element and its parent count
    apart from the ancestors. A leading ".../" (path cut by the segmenter) is ignored.
    """
    segments = _path_segments(tag_path)
    tokens: list[str] = []
    for seg in segments:
        tokens.extend(segment_tokens(seg))
    for k, seg in _tail(segments, tail):
        tokens.extend(tail_tokens(seg, k))
    return tuple(tokens)


def _path_segments(tag_path: str) -> list[str]:
    """The segments of a tag path, without empty ones and the "..." of a path cut by the segmenter."""
    return [s for s in tag_path.split("/") if s and s != "..."]


def _tail(segments: list[str], tail: int) -> list[tuple[int, str]]:
    """(distance from the end, segment) of the last `tail` segments, innermost first."""
    return list(enumerate(reversed(segments[-tail:] if tail else []), start=1))


def tail_tokens(segment: str, k: int) -> tuple[str, ...]:
    """A segment's tokens prefixed with its distance from the end of the path ("1:p", "2:.main")."""
    return tuple(f"{k}:{t}" for t in segment_tokens(segment))


@functools.lru_cache(maxsize=32768)
def hash_token(token: str, buckets: int) -> int:
    """Stable bucket of a token: CRC-32 of its UTF-8 bytes modulo `buckets`."""
    return zlib.crc32(token.encode("utf-8", "surrogatepass")) % buckets


@functools.lru_cache(maxsize=16384)
def _segment_ids(segment: str, buckets: int, k: int = 0) -> tuple[int, ...]:
    """Bucket ids of one path segment's tokens, prefixed "k:" when k > 0 (see `tag_path_tokens`): `hash_token`
    of each, the prefix's CRC-32 continued over the token's bytes (the CRC-32 of the prefixed token)."""
    start = zlib.crc32(f"{k}:".encode()) if k else 0
    return tuple(zlib.crc32(t.encode("utf-8", "surrogatepass"), start) % buckets for t in segment_tokens(segment))


@functools.lru_cache(maxsize=8192)
def _path_ids(tag_path: str, buckets: int) -> tuple[int, ...]:
    """Ids of every segment of a path in order, from the ids of its parent path (cached: the paths of a
    page share their prefixes, so each new path costs one segment)."""
    head, _, last = tag_path.rpartition("/")
    own = _segment_ids(last, buckets) if last and last != "..." else ()
    return (_path_ids(head, buckets) if head else ()) + own


def last_segments(tag_path: str, tail: int) -> list[tuple[int, str]]:
    """`_tail(_path_segments(tag_path), tail)` for tail >= 0, reading only the end of the path."""
    found: list[tuple[int, str]] = []
    rest = tag_path
    while rest and len(found) < tail:
        rest, _, segment = rest.rpartition("/")
        if segment and segment != "...":
            found.append((len(found) + 1, segment))
    return found


@functools.lru_cache(maxsize=8192)
def _tag_path_ids(tag_path: str, buckets: int, tail: int = TAIL) -> np.ndarray:
    """Bucket ids of `tag_path_tokens(tag_path, tail)` (tail >= 0; cached: a site repeats its paths), int64."""
    tails = [_segment_ids(segment, buckets, k) for k, segment in last_segments(tag_path, tail)]
    return np.array(_path_ids(tag_path, buckets) + sum(tails, ()), dtype=np.int64)


def tag_bags(blocks: Sequence[Block], buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Tag-path token ids of every block as EmbeddingBag input: (ids (m,), offsets (n,)) int64."""
    parts = [_tag_path_ids(b.tag_path, buckets) for b in blocks]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lengths = np.fromiter(map(len, parts), np.int64, len(parts))
    return np.concatenate(parts), np.cumsum(lengths) - lengths


# ----------------------------------------------------------------------------------------- text n-grams
_P = 0x100000001B3  # FNV-64 prime: odd, so invertible modulo 2**64
_P_INV = pow(_P, -1, 1 << 64)
_LATIN_N = (3, 4, 5)  # character n-grams of words, boundary markers included
_CJK_N = (1, 2, 3)  # character n-grams inside CJK runs
_WORD, _LATIN, _CJK = 1, 2, 3  # salts that keep the three kinds of n-gram apart


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, in place on a uint64 array (returned): spreads polynomial hashes over all 64 bits."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


_POWERS_KEPT = 1 << 16  # powers of _P kept between pages (1 MB): pages with longer texts compute their own


@functools.cache
def _kept_powers() -> tuple[np.ndarray, np.ndarray]:
    """_power_arrays(_POWERS_KEPT), made once."""
    return _power_arrays(_POWERS_KEPT)


def _power_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**k and P**-k (mod 2**64) for k in 0..n-1, uint64."""
    one = np.ones(1, np.uint64)
    powers = np.concatenate((one, np.cumprod(np.full(n - 1, _P, dtype=np.uint64))))
    inverse = np.concatenate((one, np.cumprod(np.full(n - 1, _P_INV, dtype=np.uint64))))
    return powers, inverse


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**k and P**-k (mod 2**64) for k in 0..n-1 (at least; views of the kept arrays when they are long enough)."""
    return _kept_powers() if n <= _POWERS_KEPT else _power_arrays(n)


def _salt(kind: int, length: np.ndarray | int) -> np.ndarray:
    """What an n-gram's polynomial hash is XORed with before mixing: its kind and its length."""
    return np.uint64(kind * 0x9E3779B97F4A7C15 % (1 << 64)) + np.asarray(length, np.uint64)


def _window_hashes(cps: np.ndarray, sizes: Sequence[int]) -> dict[int, np.ndarray]:
    """For each n of `sizes` (ascending, from 1 up), the polynomial hash sum c[i+k] * P**k (k < n, mod 2**64) of
    the n code points from every position i in 0..len(cps)-n."""
    c = cps.astype(np.uint64)
    out: dict[int, np.ndarray] = {}
    h = c
    for n in range(1, max(sizes) + 1):
        if n > 1:  # every array stays uint64 (wrapping arithmetic): int64 would promote to float64
            h = h[:-1] + c[n - 1 :] * np.uint64(pow(_P, n - 1, 1 << 64))
        if n in sizes:
            out[n] = h
    return out


def _by_text(groups: Sequence[np.ndarray], starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the items of `groups` go when ordered by text, then by group, then as they come.

    groups: per group, the ascending positions of its items (their first character) in the joined texts,
    whose texts begin at `starts` (one more: the end). Returns (for each place of the order, the item's index
    in the groups laid end to end; the place of each text's first item).
    """
    within = np.stack([np.searchsorted(g, starts) for g in groups])  # (groups, texts + 1): each text's first
    sizes = np.diff(within, axis=1)  # (groups, texts)
    first = np.cumsum([0] + [len(g) for g in groups[:-1]])[:, None] + within[:, :-1]  # in the groups end to end
    lengths, first = sizes.T.ravel(), first.T.ravel()  # runs of one group in one text, in the output's order
    placed = np.cumsum(lengths) - lengths
    order = np.repeat(first - placed, lengths) + np.arange(int(lengths.sum()))
    return order, placed[:: len(groups)]


def ngram_bags(texts: Sequence[str], buckets: int, max_chars: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Hashed n-gram ids of each text as EmbeddingBag input: (ids (m,), offsets (len(texts),)) int64.

    Texts are lower-cased, cut to `max_chars` and digits folded to "0". Per text: every word (a run of
    letters/digits outside CJK) as a whole; its character 3-, 4- and 5-grams with a boundary marker at
    each end (so "<th", "he>" differ from an inner "the"); and 1-, 2-, 3-grams inside runs of CJK
    characters. A text with none of these gets an empty bag (a zero vector). A text's ids come in that
    order: words, 3-, 4-, 5-grams, CJK 1-, 2-, 3-grams, each in the order of their first characters.

    Each n-gram's id is _mix(polynomial hash of its code points ^ _salt(kind, n)) % buckets, computed over the
    whole page at once: the texts joined by "\n" (a word boundary), with non-word characters as the marker 0
    for words and their n-grams.
    """
    if not len(texts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    clipped = [t[:max_chars] for t in texts]
    joined = "\n".join(clipped)
    # the texts lower-cased one by one, joined: "\n" is neither cased nor case-ignorable, so the one context
    # lower() looks at (a final sigma) ends with each text; a letter that lower-cases to two (U+0130) changes the
    # lengths, then taken text by text
    lowered = joined.lower()
    if len(lowered) != len(joined):
        clipped = [t.lower() for t in clipped]
    lengths = np.fromiter(map(len, clipped), np.int64, len(clipped))
    starts = np.concatenate(([1], np.cumsum(lengths + 1) + 1))  # of each text, and one past the last
    cps = codepoints("\n" + lowered + "\n").copy()  # separators = word boundaries
    kind = char_kinds(cps)
    cps[(cps >= 0x30) & (cps <= 0x39)] = 0x30
    word = kind == 1
    marked = np.where(word, cps, 0).astype(np.uint64)  # non-word characters become the boundary marker 0
    hashes, owners = [], []  # per group: hashes ^ salt; the positions of their first characters
    # 1. whole words: the words' sums of marked[j] * P**j, times P**-first
    edges = np.diff(word.view(np.int8))
    first, end = np.flatnonzero(edges == 1) + 1, np.flatnonzero(edges == -1) + 1  # never the last position
    powers, inverse = _powers(len(cps))
    bounds = np.stack((first, end), axis=1).ravel()
    sums = np.add.reduceat(marked * powers[: len(cps)], bounds)[::2] if len(first) else first.astype(np.uint64)
    hashes.append(sums * inverse[first] ^ _salt(_WORD, end - first))
    owners.append(first)
    # 2. word n-grams: the inner n - 2 characters are word characters, the ends may be markers
    inner = word[1:-1]  # inner[i]: position i + 1 is a word character
    latin = _window_hashes(marked, _LATIN_N)
    for n in _LATIN_N:
        inner = inner[: max(len(cps) - n + 1, 0)]
        if n > 3:
            inner = inner & word[n - 2 : len(cps) - 1]
        i = np.flatnonzero(inner)
        hashes.append(latin[n][i] ^ _salt(_LATIN * 8 + n, n))
        owners.append(i + 1)
    # 3. CJK n-grams: all n characters CJK
    cjk = kind == 2
    if cjk.any():
        kanji = _window_hashes(cps, _CJK_N)
        run = cjk
        for n in _CJK_N:
            if n > 1:
                run = run[:-1] & cjk[n - 1 :]
            i = np.flatnonzero(run)
            hashes.append(kanji[n][i] ^ _salt(_CJK * 8 + n, n))
            owners.append(i)
    order, offsets = _by_text(owners, starts)
    mixed = _mix(np.concatenate(hashes)[order])
    ids = mixed & np.uint64(buckets - 1) if buckets & (buckets - 1) == 0 else mixed % np.uint64(buckets)
    return ids.astype(np.int64), offsets
