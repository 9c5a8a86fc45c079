"""Gold text -> block labels: correct by construction on synthetic pages, order-aware, fuzzy, partial rule."""

from __future__ import annotations

import random

import pytest

from bodyblocks.page.segment import segment
from bodyblocks.training import synth
from bodyblocks.training.labels import (
    BODY_THRESHOLD,
    align_annotated,
    align_blocks,
    annotated_tokens,
    label_page,
    oracle_text,
    tokenize,
)
from bodyblocks.types import Block, Page


def _blocks(*texts: str, paths: tuple[str, ...] = ()) -> list[Block]:
    return [Block(i, t, "p", paths[i] if paths else f"html/body/p[{i}]", f"/p[{i}]", 2) for i, t in enumerate(texts)]


def _expected(blocks: list[Block], gold: str) -> list[int]:
    """Body by construction: every line of the block is a gold line, and the block is not the sidebar's."""
    lines = set(gold.splitlines())
    return [int(all(ln in lines for ln in b.text.split("\n")) and "sidebar" not in b.tag_path) for b in blocks]


@pytest.mark.parametrize("template", synth.TEMPLATES)
@pytest.mark.parametrize("malformation", synth.MALFORMATIONS)
def test_synthetic_labels_are_correct_by_construction(template: str, malformation: str) -> None:
    for seed in range(3):
        data, gold, meta = synth.synth_page(random.Random(seed), template=template, malformation=malformation)
        blocks = segment(data).blocks
        al = align_blocks(blocks, gold)
        assert al.labels == _expected(blocks, gold)
        assert al.gold_coverage == pytest.approx(1.0)
        assert levenshtein_free_equal(oracle_text(blocks, al.labels), gold)


def levenshtein_free_equal(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def test_malformed_header_body_is_still_body() -> None:
    data, gold, meta = synth.synth_page(random.Random(11), template="post-content", malformation="missing-div")
    blocks = segment(data).blocks
    labels = align_blocks(blocks, gold).labels
    body = [b for b, y in zip(blocks, labels, strict=True) if y]
    assert body and all("div.header" in b.tag_path for b in body)
    assert not any(y for b, y in zip(blocks, labels, strict=True) if "ul.nav" in b.tag_path)


@pytest.mark.parametrize("template", ["nested-divs", "table", "article"])  # sidebar before / after the body
def test_repeated_phrase_in_sidebar_is_not_body(template: str) -> None:
    data, gold, meta = synth.synth_page(random.Random(5), template=template, malformation="intact")
    blocks = segment(data).blocks
    labels = align_blocks(blocks, gold).labels
    hits = [(b, y) for b, y in zip(blocks, labels, strict=True) if b.text == meta["repeated"]]
    assert sorted(("sidebar" in b.tag_path, y) for b, y in hits) == [(False, 1), (True, 0)]


def test_repeated_phrase_order_aware_on_plain_blocks() -> None:
    gold = "Title of the story\nFirst paragraph of the story.\nProcess\nSecond paragraph follows here."
    before = _blocks("Process", "Title of the story", "First paragraph of the story.", "Process",
                     "Second paragraph follows here.")
    assert align_blocks(before, gold).labels == [0, 1, 1, 1, 1]
    after = _blocks("Title of the story", "First paragraph of the story.", "Process",
                    "Second paragraph follows here.", "Menu", "Process")
    assert align_blocks(after, gold).labels == [1, 1, 1, 1, 0, 0]


def test_fuzzy_matching_tolerates_small_differences() -> None:
    blocks = _blocks("Home | News", "Kosovo’s future — status unclear", "The council met on Tuesday, and agreed.",
                     "Related: other stories")
    gold = "Kosovo?s future ? status unclear\nThe councl met on Tuesday and agreed"  # L3S '?' and a typo
    al = align_blocks(blocks, gold)
    assert al.labels == [0, 1, 1, 0]
    assert al.scores[1] == 1.0 and 0.5 < al.scores[2] < 1.0


def test_partial_block_rule() -> None:
    heading = "Quarterly results announced"
    mostly = _blocks(f"{heading} today", "Login")
    assert align_blocks(mostly, heading).labels == [1, 0]  # 3 of 4 words: kept
    partly = _blocks(f"{heading} Home Sports Weather Business Travel Video Contact", "Login")
    al = align_blocks(partly, heading)
    assert al.labels == [0, 0] and 0.0 < al.scores[0] < BODY_THRESHOLD  # mostly links: dropped, score kept
    assert align_blocks(partly, heading, threshold=0.3).labels == [1, 0]


def test_chinese_is_aligned_character_by_character() -> None:
    assert tokenize("处理流程：ＡＩ Model 2024年") == ["处", "理", "流", "程", "ai", "model", "2024", "年"]
    blocks = _blocks("首页 新闻 科技", "处理流程", "研究团队近日发布了新的数据平台，效果显著。", "版权所有")
    al = align_blocks(blocks, "处理流程\n研究团队近日发布了新的数据平台,效果显著")
    assert al.labels == [0, 1, 1, 0]


def test_lines_split_by_br_and_blocks_split_by_markup_both_align() -> None:
    gold = "line one of the poem\nline two of the poem\none paragraph that the page cuts in two"
    blocks = _blocks("line one of the poem\nline two of the poem", "one paragraph that", "the page cuts in two",
                     "Share this")
    assert align_blocks(blocks, gold).labels == [1, 1, 1, 0]


def test_no_gold_and_empty_gold() -> None:
    blocks = _blocks("a b c", "d e f")
    page = Page("x", b"<p>a b c</p>")
    assert label_page(page, blocks).method == "none" and label_page(page, blocks).labels == [0, 0]
    empty = align_blocks(blocks, "")
    assert empty.labels == [0, 0] and empty.gold_coverage == 1.0
    assert align_blocks([], "some gold").labels == []


ANNOTATED = """<html><head><title>t</title><style>.x-nc-sel2{}</style></head><body>
<span class="x-nc-sel0"><div><span class="x-nc-sel0">Home News Sports</span></div>
<div><span class="x-nc-sel1">Storm hits the coast</span></div>
<div><span class="x-nc-sel2">Heavy rain fell on the coast on Monday?s night.</span></div>
<div><span class="x-nc-sel4">Storm hits the coast</span></div>
<div><span class="x-nc-sel5">Great article, thanks</span></div></span>
<script>var x = "Heavy rain fell";</script></body></html>"""


def test_l3s_spans_give_the_labels() -> None:
    toks, classes = annotated_tokens(ANNOTATED)
    assert toks[:3] == ["home", "news", "sports"] and classes[:3] == [0, 0, 0]
    assert "var" not in toks and "t" not in toks  # script and title text are not page text
    blocks = _blocks("Home News Sports", "Storm hits the coast", "Heavy rain fell on the coast on Monday’s night.",
                     "Storm hits the coast", "Great article, thanks")
    al = align_annotated(blocks, ANNOTATED.encode())
    assert al.labels == [0, 1, 1, 0, 0]  # the related-content repeat of the headline is class 4
    assert al.method == "annotated" and al.gold_coverage == pytest.approx(1.0)
    page = Page("l3s", b"", gold="ignored when spans exist", labels_html=ANNOTATED.encode())
    assert label_page(page, blocks).labels == [0, 1, 1, 0, 0]


def test_oracle_text_joins_body_blocks() -> None:
    blocks = _blocks("a", "b\nc", "d")
    assert oracle_text(blocks, [0, 1, 1]) == "b\nc\nd"
    with pytest.raises(ValueError):
        oracle_text(blocks, [1])
