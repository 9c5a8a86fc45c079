"""Block features, tag-path tokens and hashed n-grams: shapes, values, and ids pinned across runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from bodyblocks.features import (
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
    from bodyblocks.features import _tag_path_ids

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
        "from bodyblocks.features import ngram_bags, hash_token; "
        "print(ngram_bags(['Stable ids'], 997)[0].sum(), hash_token('x', 997))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    env["PYTHONHASHSEED"] = "456"
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert first == second and first.strip()


def test_context_features_describe_the_block_against_its_page_and_containers() -> None:
    from bodyblocks.context import CONTEXT_NAMES, context_features
    from bodyblocks.segment import segment

    nav = "".join(f"<a href='/s{i}'>Section number {i}</a> " for i in range(10))  # link text outweighs the aside
    html = (f"<html><body><div id='nav'>{nav}</div><div id='main'>"
            + "".join(f"<p>Paragraph {i} of the article, with words enough to count.</p>" for i in range(4))
            + "</div><div id='side'><p>A short aside.</p></div></body></html>")
    blocks = segment(html).blocks
    x = context_features(blocks)
    col = {n: i for i, n in enumerate(CONTEXT_NAMES)}
    assert x.shape == (len(blocks), len(CONTEXT_NAMES)) and np.isfinite(x).all()
    main = [i for i, b in enumerate(blocks) if "Paragraph" in b.text]
    assert all(x[i, col["in_main"]] == 1 for i in main) and x[0, col["in_main"]] == 0  # the nav is outside
    assert x[main[0], col["up1_clean_share"]] > 0.8 and x[main[0], col["up1_link"]] == 0  # most text, no links
    assert x[0, col["link_vs_page"]] > 0 > x[main[0], col["link_vs_page"]]
    assert context_features([]).shape == (0, len(CONTEXT_NAMES))


def test_gbt_features_with_context_add_its_columns() -> None:
    from bodyblocks.config import GbtConfig
    from bodyblocks.context import CONTEXT_NAMES
    from bodyblocks.inference.gbt import feature_names, gbt_features
    from bodyblocks.segment import segment

    blocks = segment("<html><body><p>one paragraph here</p><p>and another</p></body></html>").blocks
    plain, ctx = GbtConfig(context=False), GbtConfig(context=True)
    assert len(feature_names(ctx)) == len(feature_names(plain)) + len(CONTEXT_NAMES)
    assert gbt_features(blocks, ctx).shape == (2, len(feature_names(ctx)))
    width = len(feature_names(plain))
    np.testing.assert_array_equal(gbt_features(blocks, ctx)[:, :width], gbt_features(blocks, plain))
