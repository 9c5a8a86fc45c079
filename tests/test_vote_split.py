"""benchmarks/vote_split.py: page kinds from structured data, the vote weighed per kind, the learned parts' veto."""

import numpy as np
import pytest
from benchmarks import vote_split

from bodyblocks.classify.blend import Blend


@pytest.mark.parametrize(("head", "kind"), [
    ('<meta property="og:type" content="article">', "article"),
    ("<meta content='Article' name='og:type'>", "article"),
    ('<script type="application/ld+json">{"@type": ["NewsArticle", "WebPage"]}</script>', "article"),
    ('<div itemscope itemtype="https://schema.org/BlogPosting">', "article"),
    ('<meta property="og:type" content="product">', "other"),
    ('<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product"}</script>', "other"),
    ("<title>Harbour works</title>", "none"),
])
def test_page_kind_reads_og_type_json_ld_and_microdata(head: str, kind: str) -> None:
    assert vote_split.page_kind(f"<html><head>{head}</head><body><p>Text</p></body></html>") == kind
    assert vote_split.page_kind(f"<html><head>{head}</head></html>".encode()) == kind


def test_the_veto_keeps_the_vote_from_lifting_what_the_learned_parts_reject() -> None:
    page = {k: np.array(v, np.float32) for k, v in (("model", [0.02, 0.6]), ("gbt", [0.04, 0.5]), ("vote", [1, 1]))}
    probs = vote_split.vetoed(0.1)(page, Blend(0.3, 0.3))
    learned = (0.3 * 0.02 + 0.4 * 0.04) / 0.7
    assert probs[0] == pytest.approx(learned)  # the vote alone would have lifted it to 0.32
    assert probs[1] == pytest.approx(0.3 * 0.6 + 0.3 + 0.4 * 0.5)  # a block the parts lean to keeps its lift
    assert np.allclose(vote_split.vetoed(0.1)(page, Blend(0.5, 0.0)), [0.03, 0.55])  # no vote: the blend


def test_a_split_grid_sums_each_kinds_pages_under_its_own_vote_weight() -> None:
    nan = np.nan
    low, high = (0.3, 0.1, 0.5, 0.7, 0.0), (0.3, 0.3, 0.5, 0.7, 0.0)
    scores = {  # three pages: an article page, a product page, a page with no gold
        low: {"s": (np.array([0.9, 0.5, nan]), np.array([0.95, 0.5, nan]))},
        high: {"s": (np.array([0.8, 0.9, nan]), np.array([0.85, 0.95, nan]))},
    }
    kinds = {"s": np.array(["article", "other", "none"])}
    keys = {"s": ("s", np.arange(3))}
    grid = vote_split.split_grid(scores, kinds, vote_split.GROUPS["article"], keys)
    assert set(grid) == {(0.3, 0.5, 0.7, 0.0, (a, b)) for a in (0.1, 0.3) for b in (0.1, 0.3)}
    assert grid[(0.3, 0.5, 0.7, 0.0, (0.1, 0.3))]["s"] == pytest.approx((0.9, 1.0))  # each kind its best weight
    assert grid[(0.3, 0.5, 0.7, 0.0, (0.3, 0.1))]["s"] == pytest.approx((0.65, 0.0))
    same = vote_split.split_grid(scores, kinds, vote_split.GROUPS["same"], keys)
    assert same[(0.3, 0.5, 0.7, 0.0, (0.1,))]["s"] == pytest.approx((0.7, 0.5))  # the grid's own setting


def test_the_links_variant_lifts_no_link_list() -> None:
    class B:
        def __init__(self, links: float) -> None:
            self.link_density = links

    class Doc:
        blocks = [B(0.0), B(0.9)]

    page = {"model": np.full(2, 0.2, np.float32), "gbt": np.full(2, 0.2, np.float32), "vote": np.ones(2, np.float32),
            "doc": Doc()}
    assert np.allclose(vote_split.unlinked(0.5)(page, Blend(0.3, 0.3)),
                       [0.3 * 0.2 + 0.3 + 0.4 * 0.2, 0.3 * 0.2 + 0.4 * 0.2])


def test_scores_cached_with_workers_are_those_of_one_process(tmp_path, monkeypatch) -> None:
    from benchmarks import loso_blend

    from bodyblocks.extraction.segmenting import segment_page

    paras = [f"Paragraph {i} of the harbour story, with enough words to read as body text." for i in range(3)]
    related = "Related: the council will vote on the new harbour wall budget next week"
    doc = segment_page("<html><body><article>" + "".join(f"<p>{x}</p>" for x in paras)
                       + f"<ul><li><a href='/r'>{related}</a></li></ul></article></body></html>", voting=True)
    link = np.array([b.link_density > 0.5 for b in doc.blocks])
    model = np.where(link, 0.2, 0.9).astype(np.float32)
    page = {"id": "p", "lang": "en", "gold": "\n".join(paras), "doc": doc, "model": model, "gbt": model,
            "vote": np.ones(len(model), np.float32)}
    parts = {s: [page, {**page, "gold": None}] for s in loso_blend.SOURCES}
    chosen = [(0.2, 0.0, 0.45, 0.6, 0.0), (0.2, 0.3, 0.45, 0.6, 0.0)]  # the vote lifts the related link to 0.46
    monkeypatch.setattr(vote_split, "settings", lambda: chosen)
    one = vote_split.cached_scores(tmp_path / "one.json.gz", parts, vote_split.blended, 1)
    two = vote_split.cached_scores(tmp_path / "two.json.gz", parts, vote_split.blended, 2)
    assert list(one) == list(two) == chosen
    plain, voted = (one[s]["wcxb-dev"][0] for s in chosen)
    assert plain[0] > 0.99 > voted[0] and np.isnan(plain[1])  # the page without gold is not scored
    for s in chosen:
        assert np.array_equal(two[s]["dragnet"][0], one[s]["dragnet"][0], equal_nan=True)
        assert np.array_equal(two[s]["dragnet"][1], one[s]["dragnet"][1], equal_nan=True)
    links = vote_split.cached_scores(tmp_path / "links.json.gz", parts, vote_split.unlinked(0.5), 2)
    assert links[chosen[1]]["wcxb-dev"][0][0] > 0.99  # no vote for the link: not lifted
    nothing = lambda page, blend: np.zeros(len(page["model"]), np.float32)  # noqa: E731 - scored, it would keep none
    again = vote_split.cached_scores(tmp_path / "one.json.gz", parts, nothing, 1)  # read, not scored again
    assert all(np.array_equal(again[s]["daniel"][0], one[s]["daniel"][0], equal_nan=True) for s in chosen)
