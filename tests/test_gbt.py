"""The boosted-tree baseline: features, exported trees equal scikit-learn's, training, extractor, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.classify.trees import GbtModel, _Vocabulary, feature_names, gbt_features
from bodyblocks.cli import main
from bodyblocks.config import ConfigError, GbtConfig, load_config
from bodyblocks.extraction.extractor import BlockExtractor
from bodyblocks.loading.checkpoints import load_extractor, shipped
from bodyblocks.loading.registry import get_extractor
from bodyblocks.metrics import levenshtein_ratio
from bodyblocks.page.features import FEATURE_NAMES, tag_path_tokens
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.data import load_pages
from bodyblocks.training.fit_trees import fit_sklearn, from_sklearn, page_matrix, train_gbt
from bodyblocks.training.synth import generate_corpus
from bodyblocks.types import Block, Document

SMALL = GbtConfig(max_iter=40, min_samples_leaf=5, n_iter_no_change=0)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate_corpus(root / "synth", pages=40, seed=5)
    return root


@pytest.fixture(scope="module")
def splits(corpus: Path) -> dict[str, list[CachedPage]]:
    data = load_config(None, [f"data.root={corpus}", "data.datasets=[synth]", f"data.cache_dir={corpus / 'cache'}"])
    return load_pages(data.data, workers=1)


@pytest.fixture(scope="module")
def trained(splits: dict[str, list[CachedPage]], tmp_path_factory: pytest.TempPathFactory) -> tuple[GbtModel, Path]:
    model = train_gbt(splits["train"], splits["val"], GbtConfig(max_iter=60, min_samples_leaf=5))
    return model, model.save(tmp_path_factory.mktemp("ckpt") / "gbt")


def _blocks() -> list[Block]:
    paths = ["html/body/div.nav/a", "html/body/div#main/p", "html/body/div#main/p", "html/body/div.footer/span"]
    texts = ["Home", "A long paragraph of body text, with commas.", "Another one.", "(c) 2024"]
    pairs = enumerate(zip(paths, texts, strict=True))
    return [Block(i, t, p.rsplit("/", 1)[1], p, "/x", 3, text_len=len(t)) for i, (p, t) in pairs]


def test_features_hold_the_block_its_neighbours_and_tag_indicators() -> None:
    cfg = GbtConfig(tag_buckets=64, neighbours=1)
    x = gbt_features(_blocks(), cfg)
    f = len(FEATURE_NAMES)
    assert x.shape == (4, len(feature_names(cfg))) == (4, 3 * f + 64)
    assert np.isnan(x[0, f : 2 * f]).all() and np.isnan(x[3, 2 * f : 3 * f]).all()  # no block before / after
    assert np.array_equal(x[1, f : 2 * f], x[0, :f]) and np.array_equal(x[1, 2 * f : 3 * f], x[2, :f])
    tags = x[:, 3 * f :]
    assert set(np.unique(tags)) <= {0.0, 1.0} and (tags.sum(1) > 0).all()
    assert np.array_equal(tags[1], tags[2]) and not np.array_equal(tags[0], tags[1])
    assert gbt_features(_blocks()[:1], GbtConfig(neighbours=2)).shape[0] == 1  # shorter than the window
    assert gbt_features([], cfg).shape == (0, x.shape[1])


def test_features_reuse_what_the_model_computed() -> None:
    """The ensemble hands over the model's block features and finer tag ids: the same matrix comes out."""
    from bodyblocks.page.features import block_features, tag_bags

    cfg, blocks = GbtConfig(tag_buckets=64, neighbours=1), _blocks()
    ids, offsets = tag_bags(blocks, 16384)
    x = gbt_features(blocks, cfg)
    assert np.array_equal(gbt_features(blocks, cfg, block_features(blocks), (ids, offsets, 16384)), x, equal_nan=True)
    other = gbt_features(blocks, cfg, tags=(ids * 0, offsets, 1000))  # 1000 is no multiple of 64: ids recomputed
    assert np.array_equal(other, x, equal_nan=True)


def test_exported_trees_predict_what_sklearn_predicts(splits: dict[str, list[CachedPage]], tmp_path: Path) -> None:
    x, y = page_matrix(splits["train"], SMALL)
    x_val, y_val = page_matrix(splits["val"], SMALL)
    clf = fit_sklearn(x, y, x_val, y_val, SMALL)
    x_val[::3, : len(FEATURE_NAMES)] = np.nan  # missing values follow each node's learned NaN direction
    expected = clf.predict_proba(x_val)[:, 1]
    from_sklearn(clf, SMALL).save(tmp_path / "gbt")
    loaded = GbtModel.load(tmp_path / "gbt")
    assert loaded.n_trees == clf.n_iter_ and 0.0 < expected.min() < 0.5 < expected.max() < 1.0
    np.testing.assert_allclose(loaded.predict_proba(x_val), expected, rtol=0, atol=1e-12)
    meta = json.loads((tmp_path / "gbt" / "config.json").read_text())
    assert meta["kind"] == "gbt" and len(meta["feature_names"]) == x.shape[1]
    # both walks: the NumPy one (no export) and ONNX Runtime's on the exported trees.onnx
    assert loaded.prepare_walk() == "numpy"
    from bodyblocks.training.export import export_trees

    export_trees(tmp_path / "gbt", [])
    exported = GbtModel.load(tmp_path / "gbt")
    assert exported.prepare_walk() == "onnx"
    np.testing.assert_allclose(exported.predict_proba(x_val), expected, rtol=0, atol=1e-6)  # (float32 sums)


def test_the_numpy_walk_stands_in_without_onnx_runtime(trained: tuple[GbtModel, Path],
                                                      splits: dict[str, list[CachedPage]],
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import shutil

    from bodyblocks.classify import onnx_model
    from bodyblocks.training.export import export_trees

    folder = tmp_path / "gbt"
    shutil.copytree(trained[1], folder)
    export_trees(folder, [])
    x, _ = page_matrix(splits["val"], trained[0].cfg)
    expected = GbtModel.load(trained[1]).predict_proba(x)
    monkeypatch.setattr(onnx_model, "runtime_installed", lambda: False)
    model = GbtModel.load(folder)
    assert model.prepare_walk() == "numpy"
    np.testing.assert_allclose(model.predict_proba(x), expected, rtol=0, atol=1e-12)


def test_pages_walked_together_get_what_each_gets_alone(trained: tuple[GbtModel, Path],
                                                       splits: dict[str, list[CachedPage]]) -> None:
    from bodyblocks.page.features import block_features, tag_bags

    model = trained[0]
    pages = [cp.blocks for cp in splits["val"][:4]]
    pages.insert(2, [])  # a page with no block keeps its place
    buckets = model.cfg.tag_buckets * 4  # as the ensemble hands over the model's tag ids
    given = [(b, block_features(b), (*tag_bags(b, buckets), buckets)) if b else (b, None, None) for b in pages]
    for inputs in ([(blocks, None, None) for blocks in pages], given):
        together = model.pages_probabilities(inputs)
        assert [len(p) for p in together] == [len(b) for b in pages] and together[2].dtype == np.float32
        for blocks, p in zip(pages, together, strict=True):
            alone = model.predict_proba(gbt_features(blocks, model.cfg)) if blocks else np.zeros(0)
            np.testing.assert_allclose(p, alone.astype(np.float32), rtol=0, atol=1e-7)
    assert model.pages_probabilities([]) == []


def test_train_gbt_learns_and_the_extractor_uses_it(splits: dict[str, list[CachedPage]], corpus: Path,
                                                    trained: tuple[GbtModel, Path]) -> None:
    model, folder = trained
    assert model.metrics["val_char_f1"] > 0.9 and 0.0 < model.threshold < 1.0
    ex = get_extractor("gbt", checkpoint=folder)
    assert isinstance(ex, BlockExtractor) and ex.name == "gbt" and ex.model is None
    assert ex.gbt.model.engine == "numpy"  # a folder that `bodyblocks export` has not seen: the NumPy walk
    page = splits["test"][0]
    html = (corpus / "synth" / "html" / f"{page.id}.html.gz").read_bytes()
    result = ex.extract(html)
    assert result.kept and result.text == "\n".join(result.blocks[i].text for i in result.kept)  # type: ignore[index]
    docs = [Document(page.blocks, title=page.title), Document([])]
    batch = ex.extract_documents(docs)
    assert batch[0].text == result.text and batch[1].no_body and batch[1].text == ""


def test_holdout_when_no_validation_pages_are_given(splits: dict[str, list[CachedPage]]) -> None:
    pages = splits["train"] + splits["val"]
    model = train_gbt(pages, None, SMALL)
    assert 0 < model.metrics["val_pages"] < len(pages) == model.metrics["train_pages"] + model.metrics["val_pages"]


def test_decision_keeps_nothing_below_the_threshold(trained: tuple[GbtModel, Path]) -> None:
    rule = load_extractor("gbt", trained[1], threshold=0.9, confident=0.95).rule
    doc = Document(_blocks())
    out = rule.decide(doc, np.array([0.1, 0.92, 0.3, 0.2]), "gbt")
    assert out.kept == [1] and out.text == doc.blocks[1].text and out.low_confidence and not out.no_body
    none = rule.decide(doc, np.array([0.1, 0.2, 0.3, 0.2]), "gbt")
    assert none.text == "" and none.no_body and none.kept == [] and none.confidence == pytest.approx(0.3)
    assert rule.rescue is None  # a threshold given by hand turns the checkpoint's tuned rescue off
    rescuing = load_extractor("gbt", trained[1], threshold=0.9, rescue=0.25).rule
    out = rescuing.decide(doc, np.array([0.1, 0.2, 0.3, 0.2]), "gbt")
    assert out.kept == [2] and out.low_confidence and not out.no_body
    tuned = load_extractor("gbt", trained[1]).rule
    assert tuned.rescue == trained[0].rescue and tuned.threshold == trained[0].threshold


def test_bad_settings_and_checkpoints_are_refused(trained: tuple[GbtModel, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_iter"):
        GbtConfig(max_iter=0)
    with pytest.raises(ConfigError, match="learning_rate"):
        GbtConfig(learning_rate=0.0)
    (tmp_path / "config.json").write_text(json.dumps({"format_version": 1, "kind": "hash"}))
    with pytest.raises(ValueError, match="not a gbt checkpoint"):
        GbtModel.load(tmp_path)
    model = trained[0]
    broken = GbtModel(model.cfg, {**model.trees, "left": model.trees["left"] + 10**6}, model.baseline, model.depth)
    broken.save(tmp_path / "broken")
    with pytest.raises(ValueError, match="outside"):
        GbtModel.load(tmp_path / "broken")


def test_cli_train_gbt(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train-gbt", "--out", str(tmp_path / "gbt"), "--max-iter", "20", "--set", "gbt.tag_buckets=32",
            "--set", f"data.root={corpus}",
            "--set", "data.datasets=[synth]", "--set", f"data.cache_dir={corpus / 'cache'}"]
    assert main(args) == 0
    assert "val_char_f1" in capsys.readouterr().out and (tmp_path / "gbt" / "model.safetensors").exists()
    assert main(["train-gbt", "--set", "data.nope=1"]) == 2
    assert main(["train-gbt", "--set", "gbt.containers=2"]) == 2  # not a setting (tried, not shipped)
    # `bodyblocks tune` re-tunes a gbt checkpoint on the data recorded in it, reproducing the training-time rule
    meta = json.loads((tmp_path / "gbt" / "config.json").read_text())
    assert meta["gbt"]["max_iter"] == 20 and GbtModel.load(tmp_path / "gbt").cfg.tag_buckets == 32
    capsys.readouterr()
    assert main(["tune", str(tmp_path / "gbt")]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert (tuned["threshold"], tuned["rescue"]) == (meta["threshold"], meta["rescue"])
    assert tuned["val_page_f1"] == pytest.approx(meta["metrics"]["val_page_f1"])


SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@pytest.mark.skipif(shipped("gbt") is None, reason="checkpoints/gbt is not shipped in this checkout")
@pytest.mark.parametrize("name", ["article-utf8", "news-gbk-undeclared"])
def test_shipped_gbt_finds_the_body_of_the_sample_pages(name: str) -> None:
    ex = get_extractor("gbt")  # the default checkpoint
    result = ex.extract((SAMPLES / f"{name}.html").read_bytes())
    gold = (SAMPLES / f"{name}.gold.txt").read_text(encoding="utf-8")
    assert levenshtein_ratio(gold, result.text) > 0.9 and not result.low_confidence


def _site_page(site: str, paths: list[str]) -> CachedPage:
    blocks = [Block(i, f"text {i}", p.rsplit("/", 1)[1], p, "/x", 3, text_len=6) for i, p in enumerate(paths)]
    return CachedPage(f"{site}-{len(paths)}", "d", "en", None, site, "", blocks, [1] * len(blocks),
                      [1.0] * len(blocks), None)


def test_site_vocabulary_keeps_the_tokens_most_sites_share() -> None:
    from bodyblocks.training.fit_trees import site_vocabulary, with_vocabulary

    pages = [_site_page(f"s{i}", ["html/body/div.comment/p", f"html/body/div.own{'xyz'[i]}/p"]) for i in range(3)]
    pages.append(_site_page("s0", ["html/body/div.owna/p"]))  # a second page of a site counts that site once
    vocab = site_vocabulary(pages, 100, 3)
    assert ".comment" in vocab and "2:.comment" in vocab and "p" in vocab and not any("own" in t for t in vocab)
    assert vocab[: 3] == sorted(vocab[: 3])  # ties (all on 3 sites) by token
    assert site_vocabulary(pages, 2, 3) == vocab[:2] and site_vocabulary(pages, 100, 4) == []
    cfg = with_vocabulary(pages, GbtConfig(tag_buckets=0, tag_vocab=100, vocab_sites=3))
    assert cfg.tokens == vocab
    kept = GbtConfig(tag_buckets=0, tag_vocab=100, tokens=["p"])
    assert with_vocabulary(pages, kept) is kept  # trees trained again from a checkpoint keep its vocabulary
    assert with_vocabulary(pages, GbtConfig()).tokens == []  # none asked for


def test_features_hold_one_column_per_vocabulary_token() -> None:
    cfg = GbtConfig(tag_buckets=8, neighbours=0, tag_vocab=4, tokens=[".nav", "1:p", "footer", "div"])
    x = gbt_features(_blocks(), cfg)
    f = len(FEATURE_NAMES)
    names = feature_names(cfg)
    assert x.shape == (4, f + 8 + 4) == (4, len(names)) and names[f + 8 :] == [f"token:{t}" for t in cfg.tokens]
    assert x[:, f + 8 :].tolist() == [[1, 0, 0, 1], [0, 1, 0, 1], [0, 1, 0, 1], [0, 0, 0, 1]]  # "footer": no token
    no_buckets = GbtConfig(tag_buckets=0, neighbours=0, tag_vocab=4, tokens=cfg.tokens)
    y = gbt_features(_blocks(), no_buckets)
    assert np.array_equal(y[:, f : f + 4], x[:, f + 8 :]) and y.shape[1] == len(feature_names(no_buckets))
    with pytest.raises(ConfigError, match="tag_vocab"):
        GbtConfig(tag_vocab=1, tokens=["a", "b"])
    with pytest.raises(ConfigError, match="tag_vocab"):
        GbtConfig(tag_vocab=2, tokens=[""])


def test_trees_with_a_vocabulary_learn_it_keep_it_and_export(splits: dict[str, list[CachedPage]],
                                                           tmp_path: Path) -> None:
    from bodyblocks.training.export import export_trees

    cfg = GbtConfig(max_iter=40, min_samples_leaf=5, n_iter_no_change=0, tag_buckets=0, tag_vocab=32, vocab_sites=2)
    model = train_gbt(splits["train"], splits["val"], cfg)
    assert 0 < len(model.cfg.tokens) <= 32 and model.metrics["val_char_f1"] > 0.9
    model.save(tmp_path / "gbt")
    loaded = GbtModel.load(tmp_path / "gbt")
    assert loaded.cfg.tokens == model.cfg.tokens
    page = splits["test"][0]
    expected = model.page_probabilities(page.blocks)
    np.testing.assert_allclose(loaded.page_probabilities(page.blocks), expected, rtol=0, atol=1e-12)
    export_trees(tmp_path / "gbt", [])
    exported = GbtModel.load(tmp_path / "gbt")
    assert exported.prepare_walk() == "onnx"
    np.testing.assert_allclose(exported.page_probabilities(page.blocks), expected, rtol=0, atol=1e-6)


def test_the_vocabulary_columns_of_a_path_are_those_of_its_tokens() -> None:
    """Built from each segment's columns (memoised), a path's columns are exactly the vocabulary tokens among
    tag_path_tokens(path), the tail's prefixed tokens included, also after the memo is cleared."""
    tokens = ("div", ".main", "1:p", "2:.article", ".article", "1:.body", "2:div", "span", "1:li", ".nav")
    paths = ["html/body/div#main/div.article-body/p", "html/body/div.nav/ul/li", ".../div.articleBody2/p",
             "html/body/p", "html/body/div#main/div.article-body/span", "html//body/div.Main_nav/a", "p", ""]
    vocab = _Vocabulary(tokens)
    vocab.MAX_PATHS = 3  # the memo starts again mid-way
    for _ in range(2):
        for path in paths:
            want = sorted({tokens.index(t) for t in tag_path_tokens(path) if t in tokens})
            assert vocab.columns(path) == want, path
    assert vocab.columns("html/body/div#main/div.article-body/p") == sorted(
        tokens.index(t) for t in ("div", ".main", "1:p", "2:.article", ".article", "2:div"))


def test_group_features_describe_the_blocks_that_share_a_tag_path() -> None:
    from bodyblocks.classify.trees import GROUP_NAMES, group_features

    blocks = _blocks()  # nav link, two paragraphs of one container, a footer
    blocks[0].link_len = blocks[0].text_len
    g = group_features(blocks)
    col = {name: j for j, name in enumerate(GROUP_NAMES)}
    assert g.shape == (4, len(GROUP_NAMES))
    assert np.array_equal(g[1], g[2])  # the two paragraphs are one group
    assert g[1, col["group:log_size"]] == pytest.approx(np.log1p(2) / 4) and g[0, col["group:log_size"]] == (
        pytest.approx(np.log1p(1) / 4))
    total = sum(b.text_len for b in blocks)
    assert g[1, col["group:text_share"]] == pytest.approx((blocks[1].text_len + blocks[2].text_len) / total)
    assert g[0, col["group:link_density"]] == 1.0 and g[1, col["group:link_density"]] == 0.0
    assert g[1, col["group:spread"]] == pytest.approx(1 / 3) and g[3, col["group:spread"]] == 0.0
    np.testing.assert_allclose(g[:, col["page:link_density"]], blocks[0].text_len / total)
    assert group_features([]).shape == (0, len(GROUP_NAMES))


def test_trees_with_groups_append_the_group_columns_learn_and_export(splits: dict[str, list[CachedPage]],
                                                                   tmp_path: Path) -> None:
    from bodyblocks.classify.trees import GROUP_NAMES, group_features
    from bodyblocks.training.export import export_trees

    cfg = GbtConfig(max_iter=40, min_samples_leaf=5, n_iter_no_change=0, tag_buckets=16, groups=True)
    x = gbt_features(_blocks(), cfg)
    assert x.shape[1] == len(feature_names(cfg)) == len(feature_names(GbtConfig(tag_buckets=16))) + len(GROUP_NAMES)
    assert np.array_equal(x[:, -len(GROUP_NAMES) :], group_features(_blocks()))
    model = train_gbt(splits["train"], splits["val"], cfg)
    model.save(tmp_path / "gbt")
    loaded = GbtModel.load(tmp_path / "gbt")
    assert loaded.cfg.groups and model.metrics["val_char_f1"] > 0.9
    page = splits["test"][0]
    expected = model.page_probabilities(page.blocks)
    export_trees(tmp_path / "gbt", [])
    np.testing.assert_allclose(GbtModel.load(tmp_path / "gbt").page_probabilities(page.blocks), expected, atol=1e-6)
