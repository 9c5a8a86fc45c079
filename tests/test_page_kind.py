"""The page's kind (classify/pagekind.py): its features, the shipped classifier, and page_kind in every output."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.classify.pagekind import (
    PAGE_KINDS,
    KindModel,
    features_of,
    kind_row,
    kinds_of,
    page_kinds,
    page_rows,
    shipped_folder,
    with_url,
)
from bodyblocks.extraction.segmenting import segment_page
from bodyblocks.page.kind_features import (
    CUES,
    DECISION_FEATURES,
    KIND_FEATURES,
    PAGE_FEATURES,
    URL,
    decision_features,
    kind_features,
    ld_types,
    page_cues,
)
from bodyblocks.page.segment import parse
from bodyblocks.types import Block

PARAS = "".join(f"<p>The harbour works began on Monday, paragraph {i}, and the council said the quay would reopen "
                "in spring after the old pilings are replaced, officials told reporters.</p>" for i in range(8))
ARTICLE = ("<html><head><title>Harbour works begin - Port News</title><meta property='og:type' content='article'>"
           "<link rel='canonical' href='https://news.example/2024/05/17/harbour-works-begin-on-monday'>"
           '<script type="application/ld+json">{"@type": "NewsArticle", "headline": "Harbour works"}</script>'
           f"</head><body><nav><a href='/'>Home</a></nav><article><h1>Harbour works begin</h1>{PARAS}</article>"
           "</body></html>")
CARDS = "".join(f"<div class='product-card'><h3><a href='/p/{i}'>Wool runner {i}</a></h3><span class='price'>"
                f"${90 + i}.00</span><p><a href='/cart/{i}'>Add to cart</a></p><button>Save</button></div>"
                for i in range(12))
SHOP = ("<html><head><title>Men's sneakers | Shop</title><link rel='canonical' href='/collections/mens-sneakers'>"
        '<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [{"@type": '
        '["CollectionPage", "WebPage"]}, {"@type": "https://schema.org/ItemList"}]}</script></head><body>'
        f"<form><input type='hidden' name='t'><input name='q'></form><main>{CARDS}</main></body></html>")


def _value(row: np.ndarray, name: str) -> float:
    return float(row[KIND_FEATURES.index(name)])


# ----------------------------------------------------------------------------------------- features
def test_ld_types_reads_strings_lists_and_schema_org_addresses_without_parsing() -> None:
    text = '{"@type": ["Product", "https://schema.org/Offer"], "x": {"@type" : "AggregateRating"}} broken {'
    assert ld_types(text) == ["Product", "Offer", "AggregateRating"]


def test_page_cues_name_the_structured_data_types_og_type_and_the_visible_form_fields() -> None:
    cues = page_cues(parse(SHOP.replace("<main>", "<main itemscope itemtype='http://schema.org/Product'>"), "lxml"))
    assert {"CollectionPage", "WebPage", "ItemList", "Product"} <= set(cues["types"])
    assert cues["og"] == "" and cues["counts"]["form"] == 1 and cues["counts"]["button"] == 12
    assert cues["counts"]["input"] == 1  # the hidden one is no field a reader sees
    assert page_cues(parse(ARTICLE, "lxml"))["og"] == "article"
    assert page_cues(None) == {}


def test_a_shop_page_and_an_article_differ_in_the_features_that_name_them() -> None:
    shop = features_of(segment_page(SHOP))
    article = features_of(segment_page(ARTICLE))
    assert shop.shape == article.shape == (len(PAGE_FEATURES),)
    assert _value(shop, "text:price") == 12 and _value(shop, "text:cart") == 12 and _value(article, "text:price") == 0
    assert _value(shop, "type:collection") == 1 and _value(shop, "type:article") == 0
    assert _value(article, "type:article") == 1 and _value(article, "og:article") == 1
    assert _value(shop, "url:collection") == 1 and _value(article, "url_date") == 1
    assert _value(article, "url_slug_words") == 5 and _value(shop, "path:product") > 0.5
    assert _value(shop, "linked_headings") == 12 and _value(shop, "top_group_parents") >= 12
    assert _value(article, "prose_top_parent") == 1 and _value(shop, "prose_parents") == 0


def test_the_url_the_caller_gives_comes_before_the_canonical_one() -> None:
    doc = segment_page(ARTICLE)
    assert _value(features_of(doc), "url:documentation") == 0
    with_url(doc, "https://docs.example/reference/api/harbour")
    assert doc.extra[URL] == "https://docs.example/reference/api/harbour"
    assert _value(features_of(doc), "url:documentation") == 1
    assert _value(features_of(doc, canonical_only=True), "url:documentation") == 0


def test_without_a_url_or_markup_cues_those_features_are_unknown() -> None:
    blocks = [Block(0, "Some text of a page", "p", "html/body/p", "/html[1]/body[1]/p[1]", 2, text_len=16)]
    row = kind_features(blocks, "", None, None)
    assert _value(row, "url_known") == 0 and math.isnan(_value(row, "url_depth"))
    assert math.isnan(_value(row, "type:article")) and math.isnan(_value(row, "n_form"))
    assert _value(row, "log_blocks") == pytest.approx(math.log1p(1))
    assert kind_features([], "", "not a url at all", {}).shape == (len(PAGE_FEATURES),)


def test_the_decision_features_say_what_the_extractor_kept() -> None:
    import bodyblocks

    ex = bodyblocks.get_extractor("gbt")
    docs = [ex.page_segmenter(SHOP), ex.page_segmenter(ARTICLE)]
    shop, article = ex.extract_documents(docs)
    assert KIND_FEATURES == (*PAGE_FEATURES, *DECISION_FEATURES)
    rows = {}
    for name, e in (("shop", shop), ("article", article)):
        rows[name] = dict(zip(DECISION_FEATURES, decision_features(e.blocks, e.probabilities, e.kept, e.confidence),
                              strict=True))
        kept = set(e.kept or ())
        chars = sum(b.text_len for b in e.blocks or ())
        assert rows[name]["kept:text_share"] == pytest.approx(
            sum(b.text_len for i, b in enumerate(e.blocks or ()) if i in kept) / chars)
        assert rows[name]["kept:none"] == float(not kept)
    assert rows["article"]["kept:top_group_share"] > 0.8 and rows["article"]["kept:link_density"] == 0
    assert rows["article"]["kept:log_blocks"] == pytest.approx(math.log1p(len(article.kept or ())) / 6)
    assert np.isnan(decision_features(None, None, None, None)).all()
    assert np.isnan(decision_features(article.blocks, [0.5], article.kept, 1.0)).all()  # not this page's
    row = kind_row(features_of(docs[1]), None)
    assert row.shape == (len(KIND_FEATURES),) and np.isnan(row[len(PAGE_FEATURES):]).all()


def test_segment_page_keeps_the_cues_and_still_names_a_thread() -> None:
    thread = ARTICLE.replace('"NewsArticle"', '"DiscussionForumPosting"')
    assert segment_page(thread).extra.get("kind") == "thread"
    doc = segment_page(ARTICLE)
    assert doc.extra.get("kind") is None and "NewsArticle" in doc.extra[CUES]["types"]


# ----------------------------------------------------------------------------------------- the classifier
def test_the_classifier_is_shipped_and_made_for_these_features() -> None:
    folder = shipped_folder()
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file(), (
        f"{folder} is missing: python -m benchmarks.page_kind")
    model = KindModel.load()
    assert set(model.classes) == set(PAGE_KINDS)
    assert model.metrics["test_accuracy"] >= 0.8


def test_the_shipped_classifier_predicts_a_kind_of_each_page() -> None:
    docs = [segment_page(SHOP), segment_page(ARTICLE), segment_page("<html><body></body></html>")]
    kinds = page_kinds(docs)
    assert kinds[0] in PAGE_KINDS and kinds[1] == "article" and kinds[2] is None
    model = KindModel.load()
    p = model.probabilities(np.stack([kind_row(features_of(d), None) for d in docs[:2]]))
    assert p.shape == (2, len(model.classes)) and np.allclose(p.sum(axis=1), 1.0)


def test_a_classifier_is_saved_and_loaded_as_the_trees_scikit_learn_fitted(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    from benchmarks.page_kind import fit, flatten

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, len(KIND_FEATURES)))
    x[rng.random(x.shape) < 0.05] = np.nan
    y = np.array(["article", "forum", "product"])[np.argmax(x[:, :3], axis=1)]
    clf = fit(x, y, {"learning_rate": 0.1, "max_leaf_nodes": 7, "max_iter": 20, "class_weight": None})
    flatten(clf, {"test_accuracy": 1.0}).save(tmp_path / "kind")
    model = KindModel.load(tmp_path / "kind")
    assert model.predict_rows(x) == list(clf.predict(x))
    assert np.allclose(model.probabilities(x), clf.predict_proba(x))


def test_a_classifier_of_other_features_or_changed_weights_is_refused(tmp_path: Path) -> None:
    shutil.copytree(shipped_folder(), tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "config.json").read_text())
    meta["feature_names"] = meta["feature_names"][:-1]
    (tmp_path / "a" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="other page features"):
        KindModel.load(tmp_path / "a")
    shutil.copytree(shipped_folder(), tmp_path / "b")
    weights = tmp_path / "b" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        KindModel.load(tmp_path / "b")


# ----------------------------------------------------------------------------------------- outputs
def test_page_kind_is_in_the_result_and_in_json_md_and_columnar_rows() -> None:
    import bodyblocks
    from bodyblocks.batch.columnar import COLUMNS
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import page_row, render

    ex = bodyblocks.get_extractor("gbt", page_kind=True).extract(ARTICLE,
                                                                 url="https://news.example/2024/05/17/harbour-works")
    assert ex.page_kind == "article"
    assert json.loads(render(ex, "json", "a"))["page_kind"] == "article"
    front = render(ex, "md", "a").split("---\n", 2)[1]
    assert 'page_kind: "article"' in front
    row = page_row(Job(key="a", source="a", position=0), ex, None)
    assert "page_kind" in COLUMNS and row["page_kind"] == "article" and set(row) == set(COLUMNS)
    assert page_row(Job(key="b", source="a", position=1), None, "error: x")["page_kind"] is None


def test_parquet_shards_have_a_page_kind_column(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import bodyblocks
    from bodyblocks.batch.columnar import ShardWriter
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import page_row

    ex = bodyblocks.get_extractor("gbt", page_kind=True).extract(SHOP)
    shards = ShardWriter(tmp_path, "parquet", 10)
    shards.start()
    shard = shards.add("in", 0, page_row(Job(key="a", source="in", position=0), ex, None))
    shards.close(True)
    table = pq.read_table(shards.path(shard))
    assert table.column("page_kind").to_pylist() == [ex.page_kind] and ex.page_kind in PAGE_KINDS


def test_the_kinds_features_are_made_in_step_one_and_the_kind_after_the_decision() -> None:
    """The page's part of the kind's row is made in step 1 (prepare, prepare_pages), so that the Ray pipeline's
    model actors get it with each page's parts; `finish` adds what the decision kept and walks the kind's trees;
    a page with no block has no kind."""
    import bodyblocks

    ex = bodyblocks.get_extractor("gbt", page_kind=True)
    docs = [ex.page_segmenter(ARTICLE), ex.page_segmenter(SHOP), ex.page_segmenter("<html><body></body></html>")]
    extractions = bodyblocks.get_extractor("gbt").extract_documents(docs)
    expected = page_kinds(docs, extractions)
    assert expected[0] == "article" and expected[1] in PAGE_KINDS and expected[2] is None
    assert expected == kinds_of(page_rows(docs), extractions)
    assert [KindModel.load().predict(d, e) for d, e in zip(docs[:2], extractions[:2], strict=True)] == expected[:2]
    prepared = ex.prepare(docs)
    rows = page_rows(docs)
    assert len(prepared.kind_rows) == 3 and prepared.kind_rows[2] is None and rows[2] is None
    for got, want in zip(prepared.kind_rows[:2], rows[:2], strict=True):
        np.testing.assert_array_equal(got, want)
    parts = ex.prepare_pages(docs)
    assert [p.kind_row is None for p in parts] == [False, False, True]
    assert [e.page_kind for e in ex.finish(ex.prepared_from(docs, parts), [])] == expected
    assert [e.page_kind for e in ex.extract_documents(docs)] == expected
    plain = bodyblocks.get_extractor("gbt")
    assert plain.prepare(docs).kind_rows == [] and [p.kind_row for p in plain.prepare_pages(docs)] == [None] * 3
    assert [e.page_kind for e in extractions] == [None] * 3


def test_page_kind_is_predicted_only_when_asked(tmp_path: Path) -> None:
    import bodyblocks
    from bodyblocks.cli import main

    assert bodyblocks.get_extractor("gbt").extract(ARTICLE).page_kind is None  # its CPU is spent only when asked
    page = tmp_path / "in" / "shop.html"
    page.parent.mkdir()
    page.write_text(SHOP, encoding="utf-8")
    for flag, out in (([], tmp_path / "a"), (["--page-kind"], tmp_path / "b")):
        assert main(["extract", str(page.parent), "--out", str(out), "--format", "json", "--workers", "1", *flag]) == 0
        kind = json.loads((out / "shop.json").read_text(encoding="utf-8"))["page_kind"]
        assert (kind is None) if not flag else kind in PAGE_KINDS
