"""benchmarks/model_cost.py: a shape of the shipped model built with random weights and exported as shipped."""

import random

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("torch")

from benchmarks import model_cost  # noqa: E402

from bodyblocks.classify.model_inputs import read_checkpoint  # noqa: E402
from bodyblocks.classify.onnx_model import OnnxModelScorer  # noqa: E402
from bodyblocks.page.segment import segment  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402


def test_a_smaller_shape_is_built_exported_and_runs_with_its_own_config(tmp_path):
    docs = [segment(synth_page(random.Random(i))[0]) for i in range(3)]
    folder = tmp_path / "shape"
    folder.mkdir()
    (folder / "config.json").write_text((model_cost.SHIPPED / "config.json").read_text(encoding="utf-8"),
                                        encoding="utf-8")
    params = model_cost.build(folder, {"d_model": 128, "d_ff": 256, "n_layers": 2}, docs)
    meta = read_checkpoint(folder)
    assert (meta["model"]["d_model"], meta["model"]["d_ff"], meta["model"]["n_layers"]) == (128, 256, 2)
    assert meta["threshold"] == read_checkpoint(model_cost.SHIPPED)["threshold"]  # the rule comes along
    shipped = read_checkpoint(model_cost.SHIPPED)["model"]
    assert shipped["d_model"] == 256 and params < 10_000_000  # the 128-d context layers and block MLP are smaller
    scorer = OnnxModelScorer.load(folder)
    p = scorer.page_probabilities(scorer.inputs(docs[0]))
    assert len(p) == len(docs[0].blocks) and ((p >= 0) & (p <= 1)).all()


def test_every_shape_changes_only_keys_of_the_model_config():
    from dataclasses import fields

    from bodyblocks.config import ModelConfig

    names = {f.name for f in fields(ModelConfig)}
    assert model_cost.REFERENCE in model_cost.SHAPES and model_cost.SHAPES[model_cost.REFERENCE] == {}
    for changes in model_cost.SHAPES.values():
        assert set(changes) <= names
