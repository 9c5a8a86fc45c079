"""The ensemble of the block Transformer and the boosted trees: folder, tuning, extractor, batching, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.cli import main
from bodyblocks.config import load_config
from bodyblocks.ensemble import WEIGHTS, EnsembleExtractor, blend, make_ensemble, read_ensemble, shipped_ensemble
from bodyblocks.extractors import get_extractor
from bodyblocks.gbt import GbtConfig, train_and_save
from bodyblocks.metrics import levenshtein_ratio
from bodyblocks.predict import ModelExtractor
from bodyblocks.segment import segment
from bodyblocks.synth import generate_corpus
from bodyblocks.train import train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(corpus root, model checkpoint, gbt checkpoint) trained on one synthetic corpus."""
    root = tmp_path_factory.mktemp("ens")
    generate_corpus(root / "synth", pages=40, seed=5)
    data = [f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}", "data.max_pages=0"]
    cfg = load_config(CONFIGS / "debug.yaml", [*data, f"train.out_dir={root / 'run'}", "train.max_steps=0",
                                               "train.epochs=3", "train.lr=3e-3"])
    train(cfg, progress=False)
    train_and_save(cfg.data, root / "gbt", GbtConfig(max_iter=30, min_samples_leaf=5, n_iter_no_change=0))
    return root, root / "run" / "best", root / "gbt"


def test_blend_is_the_weighted_mean() -> None:
    a, b = [np.array([1.0, 0.0]), np.zeros(0)], [np.array([0.0, 0.5]), np.zeros(0)]
    out = blend(a, b, 0.3)
    assert np.allclose(out[0], [0.3, 0.35]) and out[1].shape == (0,) and out[0].dtype == np.float32


def test_make_ensemble_tunes_weight_and_rule_and_the_extractor_blends(parts: tuple[Path, Path, Path],
                                                                      tmp_path: Path) -> None:
    root, model, gbt = parts
    result = make_ensemble(model, gbt, tmp_path / "ens")
    meta = read_ensemble(tmp_path / "ens")
    assert meta["weight"] in WEIGHTS and meta["weight"] == result["weight"]
    assert meta["model_path"].resolve() == model.resolve() and meta["gbt_path"].resolve() == gbt.resolve()
    by_weight = result["by_weight"]
    assert result["val_page_f1"] == max(by_weight.values())  # the best weight on validation was kept
    assert by_weight["1.0"] == result["model_alone"] and by_weight["0.0"] == result["gbt_alone"]
    ex = EnsembleExtractor(tmp_path / "ens", device="cpu")
    assert (ex.threshold, ex.rescue, ex.name) == (meta["threshold"], meta["rescue"], "ensemble")
    page = next((root / "synth" / "html").glob("*.html.gz")).read_bytes()
    doc = segment(page)
    p_model = ModelExtractor(model, device="cpu").probabilities([doc])[0]
    p_gbt = get_extractor("gbt", checkpoint=gbt).model.page_probabilities(doc.blocks)
    expected = meta["weight"] * p_model + (1 - meta["weight"]) * p_gbt
    assert np.allclose(ex.probabilities([doc])[0], expected, atol=1e-6)
    result = ex.extract(page)
    assert result.extractor == "ensemble" and result.text and len(result.probabilities or []) == len(doc.blocks)
    # a threshold given by hand turns the tuned rescue off, as for the model
    assert EnsembleExtractor(tmp_path / "ens", device="cpu", threshold=0.9).rescue is None


def test_cli_ensemble_and_tune(parts: tuple[Path, Path, Path], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    _, model, gbt = parts
    out = tmp_path / "ens"
    assert main(["ensemble", str(model), str(gbt), "--out", str(out)]) == 0
    made = json.loads(capsys.readouterr().out)
    meta = json.loads((out / "config.json").read_text())
    meta["weight"], meta["threshold"] = 0.0, 0.99  # a poor setting that `tune` must replace
    (out / "config.json").write_text(json.dumps(meta))
    assert main(["tune", str(out)]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert (tuned["weight"], tuned["threshold"]) == (made["weight"], made["threshold"])
    assert main(["ensemble", str(model), str(tmp_path / "missing"), "--out", str(tmp_path / "e2")]) == 2
    with pytest.raises(ValueError, match="not an ensemble"):
        read_ensemble(model)


def test_batched_probabilities_do_not_depend_on_the_other_pages(parts: tuple[Path, Path, Path]) -> None:
    """A page longer than the window runs alone: its windows would otherwise follow a longer companion's."""
    _, model, _ = parts
    ex = ModelExtractor(model, device="cpu", batch_size=8)
    window = ex.cfg.window

    def page(n: int, word: str) -> str:
        return "<html><body>" + "".join(f"<p>{word} paragraph {i}, some text.</p>" for i in range(n)) + "</body></html>"

    docs = [segment(page(n, w)) for n, w in ((window - 40, "short"), (window + 30, "long"), (2 * window, "longer"))]
    alone = [ex.probabilities([d])[0] for d in docs]
    together = ex.probabilities(docs)
    for a, b in zip(alone, together, strict=True):
        assert np.allclose(a, b, atol=1e-5)
    assert ex._batches(docs) == [[0], [1], [2]]
    ex.batch_size = 1
    assert ex._batches([docs[0], docs[0]]) == [[0], [1]]


@pytest.mark.skipif(shipped_ensemble() is None, reason="checkpoints/ensemble is not shipped in this checkout")
@pytest.mark.parametrize("name", ["article-utf8", "news-gbk-undeclared"])
def test_shipped_ensemble_finds_the_body_of_the_sample_pages(name: str) -> None:
    result = get_extractor("ensemble", device="cpu").extract((SAMPLES / f"{name}.html").read_bytes())
    gold = (SAMPLES / f"{name}.gold.txt").read_text(encoding="utf-8")
    assert levenshtein_ratio(gold, result.text) > 0.9 and not result.low_confidence


def test_cli_evaluate_takes_the_checkpoint_of_the_one_trained_extractor(parts: tuple[Path, Path, Path],
                                                                        tmp_path: Path) -> None:
    root, model, gbt = parts
    make_ensemble(model, gbt, tmp_path / "ens")
    base = ["evaluate", str(root / "synth"), "--limit", "3", "--workers", "0", "--json", str(tmp_path / "r.json")]
    assert main([*base, "--extractor", "ensemble", "--checkpoint", str(tmp_path / "ens")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert {r["extractor"] for r in report["summary"]} == {"ensemble"}
    assert main([*base, "--extractor", "model", "gbt", "--checkpoint", str(model)]) == 2
