"""The seams of inference: one options object for the library, the batch runner and the command line; one
default extractor everywhere; one scorer protocol that the torch and ONNX Runtime scorers implement."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

import bodyblocks
from bodyblocks.batch import BatchOptions
from bodyblocks.classify.model_inputs import Scorer
from bodyblocks.loading import checkpoints, engines
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.loading.registry import default_extractor_name, get_extractor


@pytest.mark.parametrize("field, value, message", [
    ("device", "tpu", "device must be one of"),
    ("engine", "tensorrt", "engine must be one of"),
    ("threshold", 1.5, "threshold must be a number in"),
    ("rescue", float("nan"), "rescue must be a number in"),
    ("batch_size", 0, "batch_size must be an integer >= 1"),
    ("threads", -1, "threads must be an integer >= 1"),
    ("vote", "no", "vote must be True or False"),
])
def test_a_bad_option_is_one_line_when_the_options_are_built(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        ExtractOptions(**{field: value})  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_options_by_keyword_are_the_fields_and_nothing_else() -> None:
    base = ExtractOptions(device="cpu")
    assert ExtractOptions.of(base, threshold=0.4) == ExtractOptions(device="cpu", threshold=0.4)
    assert ExtractOptions.of(None) == ExtractOptions() and ExtractOptions.of(base) is base
    assert ExtractOptions(checkpoint=Path("runs/x")).checkpoint == "runs/x"  # recorded as text
    with pytest.raises(TypeError, match="unknown extractor option.*thresold"):
        ExtractOptions.of(thresold=0.4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.device = "cuda"  # type: ignore[misc]


def test_the_library_takes_the_options_object_or_its_fields_by_keyword() -> None:
    if checkpoints.shipped("gbt") is None:
        pytest.skip("checkpoints/gbt is not shipped in this checkout")
    by_object = get_extractor("gbt", ExtractOptions(threshold=0.4, rescue=0.2, fallback=True))
    by_keyword = bodyblocks.get_extractor("gbt", threshold=0.4, rescue=0.2, fallback=True)
    loaded = bodyblocks.load("gbt", ExtractOptions(threshold=0.4), rescue=0.2, fallback=True)
    assert by_object.rule == by_keyword.rule == loaded.rule  # type: ignore[attr-defined]
    assert get_extractor("gbt", checkpoint=checkpoints.shipped("gbt")).name == "gbt"  # a folder by keyword
    assert (by_object.rule.threshold, by_object.rule.rescue, by_object.fallback) == (0.4, 0.2, True)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="takes no ExtractOptions"):
        get_extractor("heuristic", ExtractOptions())


def test_one_default_extractor_for_the_library_the_batch_runner_and_the_command_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from bodyblocks import batch
    from bodyblocks.cli import main

    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    assert default_extractor_name() == BatchOptions().extractor == "ensemble"
    seen: list[BatchOptions] = []
    monkeypatch.setattr(batch, "run_batch", lambda inputs, out, opts: seen.append(opts) or batch.Totals())
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>words</p></body></html>", encoding="utf-8")
    assert main(["extract", str(page), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    assert seen[0].extractor == "ensemble" and seen[0].options.fallback is False
    if checkpoints.shipped("gbt") is not None:  # $BODYBLOCKS_MODEL's kind, or a checkpoint's, decides everywhere
        monkeypatch.setenv(checkpoints.ENV_MODEL, str(checkpoints.shipped("gbt")))
        assert default_extractor_name() == BatchOptions().extractor == "gbt"
        monkeypatch.delenv(checkpoints.ENV_MODEL)
        assert BatchOptions(options=ExtractOptions(checkpoint="gbt")).extractor == "gbt"


def test_batch_options_refuse_extractor_options_for_an_extractor_without_them() -> None:
    with pytest.raises(ValueError, match="extractor options other than batch_size are for"):
        BatchOptions(extractor="heuristic", options=ExtractOptions(threshold=0.3))
    assert BatchOptions(extractor="heuristic", options=ExtractOptions(batch_size=4)).batch_size == 4
    assert BatchOptions(extractor="ensemble").batch_size == 1  # the runner's own default: no padding on a CPU


def test_the_journal_keeps_the_settings_the_command_line_always_kept() -> None:
    """Folders written before the options object resume: the same settings for the same flags."""
    assert BatchOptions(extractor="heuristic").output_settings() == {}
    assert BatchOptions(extractor="ensemble").output_settings() == {"fallback": False}
    opts = ExtractOptions(checkpoint="fast", fallback=True, vote=False, device="cpu", threads=2, batch_size=3)
    assert BatchOptions(extractor="ensemble", options=opts).output_settings() == {
        "checkpoint": "fast", "fallback": True, "vote": False}


def _protocol_members() -> set[str]:
    hints = set(typing.get_type_hints(Scorer))
    methods = {n for n, v in vars(Scorer).items() if callable(v) and not n.startswith("_")}
    return hints | methods


def test_the_torch_and_onnx_scorers_implement_one_protocol() -> None:
    """BlockExtractor calls `open`, `engine`, ... on either scorer: no hasattr checks at the call sites."""
    from bodyblocks.classify.model_scorer import ModelScorer
    from bodyblocks.classify.onnx_model import OnnxModelScorer

    members = _protocol_members()
    assert {"engine", "cfg", "batch_size", "encoder", "open", "warm_up", "prepare", "forward",
            "batches_from"} <= members
    folder = checkpoints.shipped("model")
    if folder is None:
        pytest.skip("checkpoints/default is not shipped in this checkout")
    scorers = [ModelScorer.load(folder, device="cpu", threads=1)]
    if engines.choose_engine(folder, "auto", "cpu") == "onnx":
        scorers.append(OnnxModelScorer.load(folder))
    for scorer in scorers:
        assert isinstance(scorer, Scorer), type(scorer).__name__
        assert all(hasattr(scorer, m) for m in members)
        scorer.open()
    assert {s.engine for s in scorers} <= {"torch", "onnx"}
