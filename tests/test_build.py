"""bodyblocks build: one command from gold pages to a complete extractor folder that --checkpoint runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bodyblocks
from bodyblocks.cli import main
from bodyblocks.loading.checkpoints import kind_of
from bodyblocks.training.build import BUILD_FILE, build
from bodyblocks.training.cache import made_with
from bodyblocks.training.synth import generate_corpus

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


def _sets(root: Path) -> list[str]:
    return [f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}", "train.epochs=2",
            "train.lr=3e-3", "gbt.max_iter=20", "gbt.min_samples_leaf=5", "gbt.n_iter_no_change=0",
            "gbt.tag_vocab=0", "ensemble.weights=[0.0,0.5,1.0]", "ensemble.vote_weights=[0.0,0.2]"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(corpus root, build folder) of one build on a synthetic corpus."""
    root = tmp_path_factory.mktemp("build")
    generate_corpus(root / "synth", pages=40, seed=3)
    out = root / "out"
    with pytest.MonkeyPatch.context() as mp:  # the ONNX export is checked on the sample pages, not 200 dataset ones
        mp.setenv("BODYBLOCKS_DATASETS", str(root / "none"))
        code = main(["build", str(CONFIGS / "debug.yaml"), "--out", str(out), "--no-progress", "--threads", "1",
                     *[f"--set={s}" for s in _sets(root)]])
    assert code == 0
    return root, out


@pytest.mark.slow
def test_a_build_is_an_extractor_that_extract_runs(built: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = built
    assert kind_of(out) == "ensemble"
    for part in ("model/model.safetensors", "model/embed.onnx", "gbt/trees.onnx", "train/best/config.json"):
        assert (out / part).is_file(), part
    record = json.loads((out / BUILD_FILE).read_text())
    assert record["command"].startswith("bodyblocks build ") and "--set=train.epochs=2" in record["command"]
    assert set(record["seconds"]) == {"train", "ship", "trees", "blend", "total"}
    assert record["made_with"] == made_with() and record["config"]["train"]["epochs"] == 2
    for part in ("model", "gbt"):  # what the parts were made with travels with them
        assert json.loads((out / part / "config.json").read_text())["made_with"] == made_with()
    page = (SAMPLES / "article-en.html").read_bytes()
    result = bodyblocks.load(out).extract(page)
    assert result.text or result.no_body  # it runs; a 2-epoch model on 40 synthetic pages need not be good
    dest = tmp_path / "x"
    assert main(["extract", str(SAMPLES / "article-en.html"), "--out", str(dest), "--checkpoint", str(out)]) == 0
    report = json.loads((dest / "report.json").read_text())
    assert report["model"]["checkpoint"].endswith("out")


@pytest.mark.slow
def test_a_build_resumes_and_refuses_a_used_folder(built: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    root, out = built
    before = json.loads((out / BUILD_FILE).read_text())["seconds"]
    assert main(["build", str(CONFIGS / "debug.yaml"), "--out", str(out), "--no-progress",
                 *[f"--set={s}" for s in _sets(root)]]) == 2
    assert "is not empty" in capsys.readouterr().err
    said: list[str] = []
    record = build(CONFIGS / "debug.yaml", out, _sets(root), resume=True, progress=False, say=said.append)
    assert said == [f"{n}. {s}: done already" for n, s in enumerate(("train", "ship", "trees", "blend"), 1)]
    assert {k: v for k, v in record["seconds"].items() if k != "total"} == {
        k: v for k, v in before.items() if k != "total"}
    (out / "gbt" / "trees.onnx").unlink()  # a stage cut short runs again, alone
    said.clear()
    build(CONFIGS / "debug.yaml", out, _sets(root), resume=True, progress=False, say=said.append)
    assert said[:3] == ["1. train: done already", "2. ship: done already", "3. trees ..."]
    assert said[-2] == "4. blend ..."  # made from the trees: made again
    assert (out / "gbt" / "trees.onnx").is_file()
    with pytest.raises(ValueError, match="built with another config"):  # stale stages are never reused
        build(CONFIGS / "debug.yaml", out, [*_sets(root), "gbt.max_iter=21"], resume=True, progress=False)
