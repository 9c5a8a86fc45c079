"""make_plan: what was asked for -> the extractor, checkpoint folder, preset, engine, threads and batch size of a
run, decided once for the command line, the batch runner, the Ray pipeline and the library."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

import bodyblocks
from bodyblocks.batch import BatchOptions
from bodyblocks.loading import checkpoints, plan
from bodyblocks.loading.options import GPU_BATCH_SIZE, LIBRARY_BATCH_SIZE, ExtractOptions
from bodyblocks.loading.plan import make_plan
from bodyblocks.runtime.cores import default_threads
from bodyblocks.runtime.extras import install_command


def _as_text(run: plan.Plan) -> plan.Plan:
    """The plan as the batch runner runs it for txt output, which shows no date (ExtractOptions.dates off)."""
    return dataclasses.replace(run, options=dataclasses.replace(run.options, dates=False))

CPU = ExtractOptions(device="cpu")


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    for name in ("ensemble", "fast", "gbt"):
        if checkpoints.shipped(name) is None:
            pytest.skip(f"the shipped {name} is not in this checkout")


def test_the_default_plan_on_a_cpu() -> None:
    run = make_plan(None, CPU, runner=True)
    assert (run.extractor, run.engine, run.preset) == ("ensemble", "onnx", "ensemble")
    assert run.folder == checkpoints.shipped("ensemble") and run.options.checkpoint is None  # the journal's
    assert (run.batch_size, run.threads) == (1, 1)  # the runner: no padding on a CPU; a session per worker
    library = make_plan(None, CPU)
    assert library.batch_size == LIBRARY_BATCH_SIZE and library.folder == run.folder
    assert make_plan(run.extractor, run.options, runner=True) == run  # a plan's options plan the same run


def test_the_fast_preset_and_its_provenance() -> None:
    run = make_plan(None, ExtractOptions(checkpoint="fast", device="cpu"), runner=True)
    assert (run.extractor, run.engine, run.preset) == ("ensemble", "onnx", "fast")
    assert run.options.checkpoint == "fast" and run.folder == checkpoints.shipped("fast")
    info = run.describe()
    assert list(info) == ["extractor", "preset", "checkpoint", "engine", "bodyblocks", "model_sha256"]
    assert info["checkpoint"] == str(checkpoints.shipped("fast").resolve()) and len(info["model_sha256"]) == 64
    assert run.headline().startswith("ensemble (preset fast: ") and " on onnx, bodyblocks " in run.headline()
    assert info["model_sha256"] != make_plan(None, CPU).describe()["model_sha256"]


def test_an_explicit_checkpoint_folder_names_its_kind() -> None:
    folder = str(checkpoints.shipped("gbt"))
    run = make_plan(None, ExtractOptions(checkpoint=folder), runner=True)
    assert (run.extractor, run.engine, run.preset, run.threads) == ("gbt", "none", "gbt", None)
    assert run.options.checkpoint == folder and run.headline().startswith("gbt (")
    assert "(trees on the CPU)" in run.headline()
    with pytest.raises(ValueError, match="--no-vote is an option of the ensemble"):
        make_plan(None, ExtractOptions(checkpoint=folder, vote=False))


def test_the_environments_model_is_the_default_of_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = checkpoints.shipped("fast")
    monkeypatch.setenv(checkpoints.ENV_MODEL, str(fast))
    run = make_plan(None, CPU, runner=True)
    assert (run.extractor, run.preset, run.options.checkpoint) == ("ensemble", "fast", str(fast))
    assert BatchOptions(options=CPU).plan == _as_text(run) and bodyblocks.load(device="cpu").rule == run.build().rule
    trees = make_plan("gbt", CPU)  # another kind: its own shipped folder, and described as that
    assert trees.options.checkpoint is None and trees.folder == checkpoints.shipped("gbt")
    assert trees.describe()["preset"] == "gbt"


def test_torch_threads_and_the_gpu_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    run = make_plan(None, ExtractOptions(engine="torch", device="cpu"), workers=2, overlap=False, runner=True)
    assert run.engine == "torch" and run.threads == default_threads(2, False) and run.batch_size == 1
    assert make_plan(None, ExtractOptions(engine="torch", threads=3)).threads == 3  # asked: kept
    monkeypatch.setattr(plan, "gpu_present", lambda: True)  # torch on a GPU: batches of pages
    on_gpu = ExtractOptions(engine="torch")
    assert make_plan(None, on_gpu, runner=True).batch_size == GPU_BATCH_SIZE
    assert make_plan(None, on_gpu).batch_size == LIBRARY_BATCH_SIZE
    assert make_plan(None, ExtractOptions(engine="torch", batch_size=8), runner=True).batch_size == 8


def test_the_accurate_preset_without_torch_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    if checkpoints.shipped(checkpoints.ACCURATE) is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ImportError) as err:
        make_plan(None, ExtractOptions(checkpoint="accurate", device="cpu"))
    assert str(err.value).endswith(f"needs torch ({install_command('gpu,e5')})")
    with pytest.raises(ValueError, match="no ONNX export"):
        make_plan(None, ExtractOptions(checkpoint="accurate", engine="onnx"))


def test_extractors_without_a_model() -> None:
    run = make_plan("heuristic", runner=True)
    assert (run.engine, run.folder, run.preset, run.batch_size, run.threads) == (None, None, None, 1, None)
    assert run.describe()["checkpoint"] is None and run.headline().startswith("heuristic, bodyblocks ")
    assert make_plan("heuristic", ExtractOptions(batch_size=4)).batch_size == 4
    with pytest.raises(ValueError, match=r"are for model, gbt, ensemble, not heuristic \(given: fallback\)"):
        make_plan("heuristic", ExtractOptions(fallback=True))
    with pytest.raises(ValueError, match="unknown extractor 'modle'"):
        make_plan("modle")


def test_the_cli_the_runner_and_the_library_run_one_plan(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    from bodyblocks import batch
    from bodyblocks.cli import main

    seen: list[BatchOptions] = []
    monkeypatch.setattr(batch, "run_batch", lambda inputs, out, opts: seen.append(opts) or batch.Totals())
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>words</p></body></html>", encoding="utf-8")
    assert main(["extract", str(page), "--out", str(tmp_path / "o"), "--checkpoint", "fast", "--device", "cpu"]) == 0
    asked = ExtractOptions(checkpoint="fast", device="cpu")
    assert seen[0].plan == BatchOptions(options=asked).plan == _as_text(make_plan(None, asked, runner=True))
    library = bodyblocks.load("fast", device="cpu")
    assert library.model.engine == "onnx" and library.model.batch_size == LIBRARY_BATCH_SIZE  # type: ignore[union-attr]
