"""Role cues for the boosted trees (role_features.py): each cue on a synthetic page, and the gbt.role_features
switch (columns appended, trees trained with them load, export and predict the same)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bodyblocks.config import GbtConfig, load_config
from bodyblocks.inference.gbt import GbtModel, feature_names, gbt_features
from bodyblocks.inference.role_features import ROLE_NAMES, role_features
from bodyblocks.segment import segment
from bodyblocks.training.data import load_pages
from bodyblocks.training.gbt import train_gbt
from bodyblocks.training.synth import generate_corpus

PAGE = """<html><body><div class="logo">Site name</div><div id="main">
<h1>The headline of the story</h1>
<p class="byline">By <a rel="author" href="/a">Joe Bloggs</a> <time>May 3, 2020</time></p>
<figure><img src="x.jpg"><figcaption>A cat on a wall. Photo: Jane Doe</figcaption></figure>
<p>The first paragraph of the body, long enough to read like body text, with commas.</p>
<p>A second paragraph of the body.</p>
<ul class="related-posts"><li><a href="/1">One other story</a></li><li><a href="/2">Two other story</a></li>
<li><a href="/3">Three other story</a></li></ul>
<ul><li>A point of the article, in plain text</li><li>Another point, <a href="/x">with a link</a> in it</li></ul>
<table><tr><th>Team</th><th>Points</th></tr><tr><td>Red</td><td>10</td></tr><tr><td>Blue</td><td>7</td></tr></table>
<address>Contact: the desk</address>
<div id="comments"><div class="comment"><p>A reader says this is nice.</p></div></div>
<div class="ad-slot">Advertisement</div>
</div></body></html>"""


@pytest.fixture(scope="module")
def page() -> tuple[list[str], np.ndarray]:
    blocks = segment(PAGE).blocks
    return [b.text for b in blocks], role_features(blocks)


def _row(page: tuple[list[str], np.ndarray], start: str) -> dict[str, float]:
    texts, x = page
    i = next(i for i, t in enumerate(texts) if t.startswith(start))
    return dict(zip(ROLE_NAMES, x[i].tolist(), strict=True))


def test_captions_bylines_and_addresses(page: tuple[list[str], np.ndarray]) -> None:
    caption, byline, body = _row(page, "A cat"), _row(page, "By Joe"), _row(page, "The first paragraph")
    assert caption["role:figure"] == caption["role:credit_text"] == 1.0 and body["role:figure"] == 0.0
    assert byline["role:byline"] == byline["role:date"] == byline["role:author_word"] == byline["role:byline_cue"] == 1
    assert body["role:byline"] == body["role:date"] == body["role:credit_text"] == 0.0
    assert _row(page, "Contact")["role:address"] == 1.0 and body["role:address"] == 0.0


def test_lists_of_links_against_lists_of_text(page: tuple[list[str], np.ndarray]) -> None:
    links, text = _row(page, "Two other"), _row(page, "A point")
    assert links["role:list_link_only"] == links["role:list_link_density"] == links["role:related_cue"] == 1.0
    assert links["role:list_items"] == pytest.approx(np.log1p(3) / 4)
    assert text["role:list_link_only"] == 0.0 and 0 < text["role:list_link_density"] < 0.5
    assert text["role:related_cue"] == 0.0 and text["role:list_items"] == pytest.approx(np.log1p(2) / 4)
    assert np.isnan(_row(page, "The first paragraph")["role:list_items"])  # not in a list


def test_promos_comments_and_table_rows(page: tuple[list[str], np.ndarray]) -> None:
    ad, comment, body = _row(page, "Advertisement"), _row(page, "A reader"), _row(page, "The first paragraph")
    assert ad["role:promo"] == ad["role:ad_cue"] == 1.0 and body["role:promo"] == body["role:ad_cue"] == 0.0
    assert comment["role:comments"] == 1.0 and body["role:comments"] == 0.0
    head, last = _row(page, "Team"), _row(page, "Blue")
    assert head["role:table_row"] == last["role:table_row"] == 1.0 and body["role:table_row"] == 0.0
    assert (head["role:first_row"], head["role:row_position"]) == (1.0, 0.0)
    assert (last["role:first_row"], last["role:row_position"]) == (0.0, 1.0)
    assert head["role:table_rows"] == pytest.approx(np.log1p(3) / 5) and np.isnan(body["role:row_position"])


def test_place_against_the_first_headline(page: tuple[list[str], np.ndarray]) -> None:
    logo, head, byline = _row(page, "Site name"), _row(page, "The headline"), _row(page, "By Joe")
    body = _row(page, "The first paragraph")
    assert (logo["role:after_h1"], head["role:after_h1"], byline["role:after_h1"]) == (0.0, 0.0, 1.0)
    assert logo["role:from_h1"] < 0 == head["role:from_h1"] < byline["role:from_h1"] < body["role:from_h1"]
    assert byline["role:text_since_h1"] == 0.0 < body["role:text_since_h1"]  # the byline and caption between
    no_h1 = role_features(segment("<html><body><p>Just a paragraph.</p></body></html>").blocks)
    assert np.isnan(no_h1[0, ROLE_NAMES.index("role:from_h1")])
    assert role_features([]).shape == (0, len(ROLE_NAMES))


def test_the_switch_appends_the_role_columns_and_is_off_by_default() -> None:
    blocks = segment(PAGE).blocks
    off, on = GbtConfig(), GbtConfig(role_features=True, context=True)
    assert not off.role_features and not any(n.startswith("role:") for n in feature_names(off))
    assert feature_names(on)[-len(ROLE_NAMES):] == list(ROLE_NAMES)
    x_on = gbt_features(blocks, on)
    assert x_on.shape == (len(blocks), len(feature_names(on)))
    np.testing.assert_array_equal(x_on[:, -len(ROLE_NAMES):], role_features(blocks))
    x_off = gbt_features(blocks, GbtConfig(context=True))
    np.testing.assert_array_equal(x_on[:, : x_off.shape[1]], x_off)  # the other columns unchanged


def test_trees_with_role_features_save_load_and_export(tmp_path: Path) -> None:
    from bodyblocks.training.export import export_trees

    generate_corpus(tmp_path / "synth", pages=30, seed=7)
    data = load_config(None, [f"data.root={tmp_path}", "data.datasets=[synth]", f"data.cache_dir={tmp_path / 'c'}"])
    splits = load_pages(data.data, workers=1)
    cfg = GbtConfig(max_iter=30, min_samples_leaf=5, n_iter_no_change=0, role_features=True)
    model = train_gbt(splits["train"], splits["val"], cfg)
    model.save(tmp_path / "gbt")
    loaded = GbtModel.load(tmp_path / "gbt")
    assert loaded.cfg.role_features and len(feature_names(loaded.cfg)) == len(feature_names(GbtConfig())) + len(
        ROLE_NAMES)
    blocks = splits["test"][0].blocks
    expected = model.page_probabilities(blocks)
    np.testing.assert_allclose(loaded.page_probabilities(blocks), expected, rtol=0, atol=1e-12)
    export_trees(tmp_path / "gbt", [])
    exported = GbtModel.load(tmp_path / "gbt")
    assert exported.prepare_walk() == "onnx"
    np.testing.assert_allclose(exported.page_probabilities(blocks), expected, rtol=0, atol=1e-6)


def test_teacher_fold_walks_a_variants_own_trees_over_cached_parts(tmp_path: Path) -> None:
    """benchmarks.teacher_fold --trees-of / --same-model-as: only the trees' P(body) is replaced."""
    from benchmarks.teacher_fold import pairs, with_trees

    generate_corpus(tmp_path / "synth", pages=30, seed=3)
    data = load_config(None, [f"data.root={tmp_path}", "data.datasets=[synth]", f"data.cache_dir={tmp_path / 'c'}"])
    splits = load_pages(data.data, workers=1)
    cfg = GbtConfig(max_iter=20, min_samples_leaf=5, n_iter_no_change=0, role_features=True)
    train_gbt(splits["train"], splits["val"], cfg).save(tmp_path / "gbt")
    doc = segment(PAGE)
    cached = [{"id": "a", "doc": doc, "model": np.zeros(len(doc.blocks)), "gbt": np.zeros(len(doc.blocks)),
               "vote": np.ones(len(doc.blocks))}, {"id": "b", "doc": None}]
    walked = with_trees(cached, tmp_path / "gbt")
    np.testing.assert_array_equal(walked[0]["gbt"], GbtModel.load(tmp_path / "gbt").page_probabilities(doc.blocks))
    assert walked[0]["model"] is cached[0]["model"] and walked[1] == cached[1]
    assert pairs(["roles=runs/a", "x=y=z"], "--trees-of") == {"roles": "runs/a", "x": "y=z"}
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        pairs(["roles"], "--trees-of")
