"""benchmarks/shape_speed.py: a model shape in the shipped ensemble, run as the command runs it."""

import argparse
import random

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("torch")

from benchmarks import shape_speed  # noqa: E402
from benchmarks.cli_speed import Run  # noqa: E402

from bodyblocks.loading import checkpoints  # noqa: E402
from bodyblocks.loading.plan import load  # noqa: E402
from bodyblocks.page.segment import segment  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402


def test_a_shape_goes_into_the_shipped_ensemble_with_the_shipped_trees_and_blend(tmp_path):
    if checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble is not shipped in this checkout")
    docs = [segment(synth_page(random.Random(i))[0]) for i in range(3)]
    folder = shape_speed.shape_ensemble(tmp_path, 0, {"use_context": False}, docs)
    meta = checkpoints.read_ensemble(folder)
    shipped = checkpoints.read_ensemble(checkpoints.shipped("ensemble"))
    assert meta["gbt_path"].resolve() == shipped["gbt_path"].resolve()
    assert (meta["weight"], meta["heuristic"], meta["threshold"]) == (shipped["weight"], shipped["heuristic"],
                                                                      shipped["threshold"])
    extractor = load(folder)
    assert extractor.model.cfg.use_context is False and extractor.model.engine == "onnx"
    assert extractor.extract(synth_page(random.Random(7))[0]).title is not None


def test_the_commands_give_each_shape_its_checkpoint_and_output_folder(tmp_path):
    cmds = shape_speed.commands(tmp_path / "pages", tmp_path / "out", {"a": tmp_path / "e0", "b": tmp_path / "e1"})
    assert list(cmds) == [shape_speed.OURS, "bodyblocks, model: a", "bodyblocks, model: b", shape_speed.PEER]
    assert "--checkpoint" not in cmds[shape_speed.OURS]
    assert cmds["bodyblocks, model: b"][cmds["bodyblocks, model: b"].index("--checkpoint") + 1] == str(tmp_path / "e1")
    outs = [c[c.index("--out") + 1] if "--out" in c else c[c.index("--output-dir") + 1] for c in cmds.values()]
    assert len(set(outs)) == len(outs)


def test_the_report_holds_each_command_against_trafilatura():
    runs = {shape_speed.OURS: [Run(20.0, 40.0, 300.0), Run(22.0, 44.0, 310.0)],
            "bodyblocks, model: x": [Run(10.0, 20.0, 200.0)], shape_speed.PEER: [Run(30.0, 60.0, 100.0)]}
    args = argparse.Namespace(pages=100, rounds=2, shapes=shape_speed.DEFAULT_SHAPES)
    text = shape_speed.report(runs, 100, args)
    assert f"| {shape_speed.OURS} | 21.00 | 42.00 | 420.0 | 305 | 1.43 | 1.43 |" in text
    assert "| bodyblocks, model: x | 10.00 | 20.00 | 200.0 | 200 | 3.00 | 3.00 |" in text
