"""classify/model_inputs.py's tag-path ids (TagIds): the arrays of features.tag_bags, whatever its memos hold."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from tests.test_features import tricky_page

from bodyblocks.classify import model_inputs as inputs
from bodyblocks.classify.model_inputs import TagIds
from bodyblocks.page.features import hash_token, tag_bags, tag_path_tokens
from bodyblocks.runtime.files import datasets_root
from bodyblocks.types import Block

PATHS = [
    "html/body/div#main_2.articleBody.post-content/p",
    ".../body/div#main_2.articleBody.post-content/p",  # cut by the segmenter
    "html", "", "...", "div#a/b//p", "html/body/div#a/b//p/",  # one segment, none, empty segments
    "html/body/div.\u00dcber-Sch\u00f6n.\u4e2d\u6587/span#x.y/a",  # non-ASCII class names
    "html/body/div#123.4-5/p",  # an id and a class without a letter: no tokens
    "html/body/div/div/div/div/p", "html/body/div/div/div/div/p/span",  # repeated segments
]


def blocks_of(paths: list[str]) -> list[Block]:
    return [Block(i, f"text {i}", "p", path, "/html[1]", path.count("/")) for i, path in enumerate(paths)]


def assert_same(got: tuple[np.ndarray, np.ndarray], expected: tuple[np.ndarray, np.ndarray]) -> None:
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype == np.int64 and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("buckets", [16384, 1000, 7, 1])
def test_tag_ids_are_features_tag_bags(buckets: int) -> None:
    blocks = blocks_of(PATHS * 2) + tricky_page()
    made = TagIds(buckets)
    for _ in range(2):  # memos empty, then full
        assert_same(made.bags(blocks), tag_bags(blocks, buckets))
    for block in blocks:  # and token by token
        assert made.path_ids(block.tag_path).tolist() == [hash_token(t, buckets) for t in
                                                           tag_path_tokens(block.tag_path)]
    assert_same(made.bags([]), tag_bags([], buckets))


def test_tag_ids_stay_right_when_their_memos_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memos emptied as they fill (every few segments here) give the same ids, and stay at most MAX long."""
    monkeypatch.setattr(TagIds, "MAX", 3)
    made = TagIds(16384)
    blocks = blocks_of(PATHS) + tricky_page()
    for _ in range(3):
        assert_same(made.bags(blocks), tag_bags(blocks, 16384))
    assert max(map(len, [*made.segments, *made.tokens, made.paths])) <= 3


def test_prepare_page_takes_the_tag_ids_of_its_bucket_count() -> None:
    """One TagIds per bucket count, the same ids as features.tag_bags for each."""
    from bodyblocks.config import ModelConfig

    blocks = blocks_of(PATHS)
    for buckets in (64, 16384, 64):
        cfg = ModelConfig(tag_buckets=buckets)
        page = inputs.prepare_page(blocks, cfg)
        assert_same((page.tag_ids, page.tag_offsets), tag_bags(blocks, buckets))
    assert {64, 16384} <= set(inputs._TAG_IDS)


@pytest.mark.skipif(datasets_root() is None, reason="../shared/datasets is not here")
def test_tag_ids_match_on_dataset_pages() -> None:
    from bodyblocks.page.segment import segment

    pages = sorted(datasets_root().glob("*/html/*.html.gz"))[3::60]
    assert len(pages) > 60
    made = TagIds(16384)
    for path in pages:
        blocks = segment(gzip.decompress(path.read_bytes())).blocks
        assert_same(made.bags(blocks), tag_bags(blocks, 16384))
