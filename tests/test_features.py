"""Block features, tag-path tokens and hashed n-grams: shapes, values, and ids pinned across runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from bodyblocks.page.features import (
    FEATURE_NAMES,
    block_features,
    char_kinds,
    codepoints,
    hash_token,
    ngram_bags,
    tag_bags,
    tag_path_tokens,
)
from bodyblocks.types import Block

COL = {name: i for i, name in enumerate(FEATURE_NAMES)}


def block(index: int, text: str, tag_path: str = "html/body/div/p", **kw: object) -> Block:
    """A Block with the segmenter's derived counts filled in from `text`."""
    n = len("".join(text.split()))
    return Block(
        index=index,
        text=text,
        tag=tag_path.split("/")[-1].split(".")[0].split("#")[0],
        tag_path=tag_path,
        xpath="/html[1]",
        depth=tag_path.count("/"),
        text_len=n,
        **kw,
    )  # type: ignore[arg-type]


def page() -> list[Block]:
    return [
        block(
            0,
            "Home News About",
            "html/body/div#nav/ul/li",
            link_len=13,
            link_density=1.0,
            in_link_only=True,
            is_list_item=True,
        ),
        block(1, "Flood relief reaches the valley", "html/body/div.article/h1", heading_level=1),
        block(
            2,
            "洪水救援车队周二抵达山谷。官员说，四所学校被用作避难所。",
            "html/body/div.article/p",
            punct_count=3,
            punct_density=3 / 28,
            sibling_paragraphs=2,
        ),
        block(
            3,
            "Relief convoys reached the valley on Tuesday after 3 days\nof rain.",
            "html/body/div.article/p",
            sibling_paragraphs=2,
        ),
        block(4, "Copyright 2026", "html/body/div.footer/td", is_table_cell=True),
    ]


def test_block_features_shape_and_values() -> None:
    blocks = page()
    x = block_features(blocks)
    assert x.shape == (5, len(FEATURE_NAMES)) and x.dtype == np.float32
    assert np.isfinite(x).all() and x.min() >= -2.0 and x.max() <= 2.0
    assert x[0, COL["link_density"]] == 1.0 and x[0, COL["in_link_only"]] == 1.0 and x[0, COL["is_list_item"]] == 1
    assert x[1, COL["h1"]] == 1.0 and x[1, [COL[f"h{k}"] for k in range(2, 7)]].sum() == 0
    assert x[2, COL["cjk_share"]] > 0.85 and x[3, COL["cjk_share"]] == 0.0
    assert x[2, COL["ends_sentence"]] == 1.0 and x[0, COL["ends_sentence"]] == 0.0
    assert x[3, COL["log_lines"]] == pytest.approx(np.log1p(2) / 3)
    assert x[3, COL["digit_share"]] == pytest.approx(1 / blocks[3].text_len)
    assert x[4, COL["is_table_cell"]] == 1.0
    assert x[:, COL["rel_position"]].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert x[:, COL["text_share"]].sum() == pytest.approx(1.0)
    assert x[1, COL["upper_share"]] == pytest.approx(1 / 27)


def test_block_features_empty_and_single_page() -> None:
    assert block_features([]).shape == (0, len(FEATURE_NAMES))
    one = block_features([block(0, "Only block")])
    assert one[0, COL["rel_position"]] == 0.0 and one[0, COL["text_share"]] == 1.0


def test_char_kinds_cover_cjk_scripts_and_astral_planes() -> None:
    kinds = char_kinds(codepoints("a1中かカ한 .😀\U00020000"))
    assert kinds.tolist() == [1, 1, 2, 2, 2, 2, 0, 0, 0, 2]


def test_tag_path_tokens() -> None:
    tokens = tag_path_tokens(".../body/div#main_2.articleBody.post-content/p")
    assert tokens == (
        "body",
        "div",
        ".main",
        ".article",
        ".body",
        ".post",
        ".content",
        "p",
        "1:p",
        "2:div",
        "2:.main",
        "2:.article",
        "2:.body",
        "2:.post",
        "2:.content",
    )
    assert tag_path_tokens("html") == ("html", "1:html")
    assert tag_path_tokens("html/body/p", tail=0) == ("html", "body", "p")


def test_tag_path_ids_are_the_hashed_tokens() -> None:
    """The cached per-segment ids (features._tag_path_ids) are those of tag_path_tokens, token by token."""
    from bodyblocks.page.features import _tag_path_ids

    paths = [".../body/div#main_2.articleBody.post-content/p", "html", "html/body/p", "div#a/b//p", "", "..."]
    for path in paths:
        for tail in (0, 1, 2, 3):
            expected = [hash_token(t, 16384) for t in tag_path_tokens(path, tail)]
            assert _tag_path_ids(path, 16384, tail).tolist() == expected


def test_hash_token_is_crc32_and_pinned() -> None:
    assert hash_token("div", 1 << 32) == zlib.crc32(b"div") == 3183918601
    assert hash_token(".content", 16384) == 218
    assert 0 <= hash_token("中文", 7) < 7


def test_tag_bags_offsets() -> None:
    blocks = page()
    ids, offsets = tag_bags(blocks, 1024)
    assert offsets.tolist()[0] == 0 and len(offsets) == len(blocks)
    sizes = np.diff(np.append(offsets, len(ids)))
    assert sizes.tolist() == [len(tag_path_tokens(b.tag_path)) for b in blocks]
    assert ids.dtype == np.int64 and ids.max() < 1024


def test_ngram_counts_and_empty_bags() -> None:
    ids, offsets = ngram_bags(["Hello world", "中文字", "", "!!"], 1 << 20)
    sizes = np.diff(np.append(offsets, len(ids))).tolist()
    # per word of 5 letters: 1 word + (7-2) 3-grams + 4 4-grams + 3 5-grams (with boundary markers)
    assert sizes == [2 * 13, 3 + 2 + 1, 0, 0]


def test_ngrams_do_not_depend_on_neighbours_or_case_or_digits() -> None:
    alone, _ = ngram_bags(["valley"], 1 << 20)
    inside, offsets = ngram_bags(["The VALLEY", "other text"], 1 << 20)
    assert set(alone) <= set(inside[: offsets[1]]) and not set(alone) & set(inside[offsets[1] :])
    y2024, _ = ngram_bags(["2024"], 1 << 20)
    y1999, _ = ngram_bags(["1999"], 1 << 20)
    assert y2024.tolist() == y1999.tolist()
    cut, _ = ngram_bags(["abcdef" * 100], 1 << 20, max_chars=6)
    assert len(cut) == len(ngram_bags(["abcdef"], 1 << 20)[0])


def test_ngram_ids_pinned() -> None:
    """Checkpoints depend on these ids: a change here silently breaks every trained hash encoder."""
    ids, offsets = ngram_bags(["Hello world", "中文"], 1 << 20)
    assert offsets.tolist() == [0, 26]
    assert ids[:4].tolist() == [937287, 97351, 18094, 643907]
    assert ids[26:].tolist() == [321739, 24000, 686110]


def test_hashes_stable_across_processes() -> None:
    code = (
        "from bodyblocks.page.features import ngram_bags, hash_token; "
        "print(ngram_bags(['Stable ids'], 997)[0].sum(), hash_token('x', 997))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    env["PYTHONHASHSEED"] = "456"
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert first == second and first.strip()


# ----------------------------------------------------------------------------------------- page-wide fast paths
def tricky_page() -> list[Block]:
    """Blocks the page-wide code paths must get right: empty and white-space-only texts, CJK mixed with Latin,
    astral characters (emoji, Han extension B) and a lone surrogate, final sigma at a text's end, U+0130 (which
    lower-cases to two characters), digits, newlines, trailing white space after a sentence end, texts over
    max_chars, and long, cut ("..."), repeated and odd tag paths."""
    long_path = ".../" + "/".join(f"div.level{i}-wrapBox" for i in range(40)) + "/p#Main_2.postBody"
    texts = [
        ("", "html/body/div#nav/ul/li"),
        ("  \u3000\t ", "html/body/div#nav/ul/li"),
        ("Breaking: 東京で大雨 warning issued 2024年7月3日.", "html/body/div.article/h1"),
        ("ΟΔΟΣ ΣΟΦΙΑΣ", long_path),
        ("İSTANBUL İzmir", long_path),
        ("emoji 😀 here \U00020000\U00020001 and a lone \ud800 surrogate!", "div#a/b//p"),
        ("First line\nsecond line\n\nlast line.   \n ", "html/body/div.article/p"),
        ("x" * 50 + " tail words", "..."),
        ("Ünïcödé ÀÉÎ ß straße ﬁ ŉ", ""),
        ("한국어 텍스트 and カタカナ ひらがな」", "html/body/table/tr/td.cell-Main"),
        ("UPPER lower MiXeD 12345 ６７８", "html/body/div.article/p"),
    ]
    return [block(i, text, path, punct_count=i % 3, punct_density=(i % 3) / 10, heading_level=i % 8,
                  link_density=(i % 4) / 3, sibling_paragraphs=i, is_list_item=i % 2 == 0)
            for i, (text, path) in enumerate(texts)]


def reference_block_features(blocks: list[Block]) -> np.ndarray:
    """block_features computed block by block in plain Python (the same formulas)."""
    from bodyblocks.page.features import _SENTENCE_END

    out = np.zeros((len(blocks), len(FEATURE_NAMES)), dtype=np.float32)
    text_len = np.array([b.text_len for b in blocks], dtype=np.float64)
    depth = np.array([b.depth for b in blocks], dtype=np.float64)
    for i, b in enumerate(blocks):
        kinds = char_kinds(codepoints(b.text)).tolist()
        chars = max(sum(c not in " \t\n\r\xa0\u3000" for c in b.text), 1)
        bmp = [ord(c) <= 0xFFFF for c in b.text]
        upper = sum(c.isupper() and k == 1 and m for c, k, m in zip(b.text, kinds, bmp, strict=True))
        alpha = sum(c.isalpha() and k == 1 and m for c, k, m in zip(b.text, kinds, bmp, strict=True))
        row = out[i]
        row[COL["log_text_len"]] = np.log1p(text_len[i]) / 8
        row[COL["link_density"]] = min(max(b.link_density, 0.0), 1.0)
        row[COL["punct_density"]] = min(b.punct_density, 1.0)
        row[COL["log_punct"]] = np.log1p(b.punct_count) / 5
        if 1 <= b.heading_level <= 6:
            row[COL[f"h{b.heading_level}"]] = 1.0
        row[COL["is_list_item"]], row[COL["is_table_cell"]] = b.is_list_item, b.is_table_cell
        row[COL["log_sibling_p"]] = np.log1p(b.sibling_paragraphs) / 4
        row[COL["depth"]] = min(depth[i], 64) / 32
        row[COL["rel_depth"]] = np.clip((depth[i] - np.median(depth)) / 8, -2, 2)
        row[COL["rel_position"]] = i / max(len(blocks) - 1, 1)
        row[COL["in_link_only"]] = b.in_link_only
        row[COL["log_lines"]] = np.log1p(b.text.count("\n") + 1) / 3
        row[COL["cjk_share"]] = kinds.count(2) / chars
        row[COL["digit_share"]] = sum(c.isdigit() and m for c, m in zip(b.text, bmp, strict=True)) / chars
        row[COL["upper_share"]] = upper / max(alpha, 1)
        row[COL["ends_sentence"]] = b.text.rstrip()[-1:] in _SENTENCE_END
        row[COL["text_share"]] = text_len[i] / max(text_len.sum(), 1.0)
        row[COL["log_page_blocks"]] = np.log1p(len(blocks)) / 8
    return out


def reference_ngrams(text: str, buckets: int, max_chars: int) -> list[int]:
    """ngram_bags' ids of one text, n-gram by n-gram with Python integers (hashes modulo 2**64)."""
    from bodyblocks.page.features import _CJK, _CJK_N, _LATIN, _LATIN_N, _P, _WORD

    m64 = (1 << 64) - 1

    def mix(h: int) -> int:
        h ^= h >> 30
        h = h * 0xBF58476D1CE4E5B9 & m64
        h ^= h >> 27
        h = h * 0x94D049BB133111EB & m64
        return h ^ (h >> 31)

    def ngram_id(seq: list[int], kind: int, n: int) -> int:
        poly = sum(c * pow(_P, k, 1 << 64) for k, c in enumerate(seq)) & m64
        salt = (kind * 0x9E3779B97F4A7C15 + n) & m64
        return mix(poly ^ salt) % buckets

    cps = [0x0A, *map(ord, text[:max_chars].lower()), 0x0A]
    kinds = char_kinds(np.array(cps, dtype=np.uint32)).tolist()
    cps = [0x30 if 0x30 <= c <= 0x39 else c for c in cps]
    marked = [c if k == 1 else 0 for c, k in zip(cps, kinds, strict=True)]
    ids, start = [], None
    for j, k in enumerate(kinds):
        if k == 1 and start is None:
            start = j
        elif k != 1 and start is not None:
            ids.append(ngram_id(marked[start:j], _WORD, j - start))
            start = None
    for n in _LATIN_N:
        ids += [ngram_id(marked[i : i + n], _LATIN * 8 + n, n) for i in range(len(cps) - n + 1)
                if all(k == 1 for k in kinds[i + 1 : i + n - 1])]
    for n in _CJK_N:
        ids += [ngram_id(cps[i : i + n], _CJK * 8 + n, n) for i in range(len(cps) - n + 1)
                if all(k == 2 for k in kinds[i : i + n])]
    return ids


def test_block_features_match_a_block_by_block_reference() -> None:
    for blocks in (tricky_page(), tricky_page()[:1], tricky_page()[4:6], page()):
        got = block_features(blocks)
        assert got.dtype == np.float32 and np.array_equal(got, reference_block_features(blocks))


def test_ngram_bags_match_a_text_by_text_reference() -> None:
    texts = [b.text for b in tricky_page()] + ["ΣΑΣ", "σ", "Σ", "AΣ\nΣA", "İ" * 5, "", "ab"]
    for buckets, max_chars in ((1 << 17, 2000), (1000, 12), (1 << 20, 1)):
        ids, offsets = ngram_bags(texts, buckets, max_chars)
        assert ids.dtype == np.int64 and offsets.dtype == np.int64 and len(offsets) == len(texts)
        bags = np.split(ids, offsets[1:])
        assert [b.tolist() for b in bags] == [reference_ngrams(t, buckets, max_chars) for t in texts]
    empty_ids, empty_offsets = ngram_bags([], 1 << 17)
    assert empty_ids.shape == empty_offsets.shape == (0,) and empty_ids.dtype == empty_offsets.dtype == np.int64


def test_tag_bags_match_the_tokens_hashed_one_by_one() -> None:
    blocks = tricky_page()
    for buckets in (16384, 1000, 1):
        ids, offsets = tag_bags(blocks, buckets)
        assert ids.dtype == offsets.dtype == np.int64
        expected = [[hash_token(t, buckets) for t in tag_path_tokens(b.tag_path)] for b in blocks]
        assert [bag.tolist() for bag in np.split(ids, offsets[1:])] == expected
    empty = tag_bags([], 16384)
    assert empty[0].shape == empty[1].shape == (0,) and empty[0].dtype == empty[1].dtype == np.int64


def test_gbt_features_match_the_columns_made_one_by_one() -> None:
    """gbt_features written into one array: the neighbours' rows (NaN past the page's ends), the tag indicators
    (from given ids of a multiple of the bucket count, or hashed anew)."""
    from bodyblocks.classify.trees import feature_names, gbt_features
    from bodyblocks.config import GbtConfig

    for n in (1, 2, 3, 11):
        blocks = tricky_page()[:n]
        base = block_features(blocks).astype(np.float64)
        for neighbours, tag_buckets in ((1, 128), (2, 64), (3, 0)):
            cfg = GbtConfig(neighbours=neighbours, tag_buckets=tag_buckets)
            parts = [base]
            for k in range(1, neighbours + 1):
                pad = np.full((k, base.shape[1]), np.nan)
                parts += [np.concatenate((pad, base))[:n], np.concatenate((base, pad))[k : k + n]]
            indicators = np.zeros((n, tag_buckets))
            for i, b in enumerate(blocks):
                for t in tag_path_tokens(b.tag_path) if tag_buckets else ():
                    indicators[i, hash_token(t, 16384) % tag_buckets] = 1.0
            parts.append(indicators)
            expected = np.concatenate(parts, axis=1)
            given = (*tag_bags(blocks, 16384), 16384)
            for x in (gbt_features(blocks, cfg), gbt_features(blocks, cfg, base.astype(np.float32), given)):
                assert x.shape == (n, len(feature_names(cfg))) and x.dtype == np.float64
                assert np.array_equal(x, expected, equal_nan=True)
