"""benchmarks/train_speed.py and benchmarks/build_compare.py: their parts on small inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import build_compare, train_speed

from bodyblocks.config import load_config
from bodyblocks.loading.checkpoints import read_ensemble, shipped
from bodyblocks.training.data import load_pages
from bodyblocks.training.loop import make_inputs
from bodyblocks.training.synth import generate_corpus

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_step_times_give_each_part_of_a_step(tmp_path: Path) -> None:
    generate_corpus(tmp_path / "synth", pages=12, seed=1)
    cfg = load_config(CONFIGS / "debug.yaml", [f"data.root={tmp_path}", "data.datasets=[synth]",
                                               f"data.cache_dir={tmp_path / 'cache'}"])
    inputs = make_inputs(load_pages(cfg.data)["train"], cfg.model)
    t = train_speed.step_times(cfg, inputs, steps=3)
    parts = ("collate", "forward", "backward", "optimizer")
    assert all(t[p] > 0 for p in parts) and t["step"] == pytest.approx(sum(t[p] for p in parts))
    assert t["params"] > 1000


def test_the_table_has_a_mean_over_the_sources_and_daniel_zh_apart() -> None:
    rows = {"a": {"x": (0.9, 0.8), "y": (0.7, 0.6), "daniel zh": (0.5, 0.5)}, "b": {"x": (1.0, 1.0)}}
    out = build_compare.table(rows, ["x", "y", "daniel"])
    lines = out.splitlines()
    assert lines[0] == "| extractor | x | y | daniel | daniel zh | mean |"
    assert lines[2] == "| a | 0.9000 / 0.8000 | 0.7000 / 0.6000 | - | 0.5000 / 0.5000 | 0.8000 / 0.7000 |"
    assert lines[3].endswith("| 1.0000 / 1.0000 |")  # the mean of the sources it has


def test_the_shipped_blend_over_a_builds_parts(tmp_path: Path) -> None:
    build = tmp_path / "build"
    for part in ("model", "gbt"):
        (build / part).mkdir(parents=True)
    folder = build_compare.shipped_blend(build, tmp_path / "blend")
    meta = json.loads((folder / "config.json").read_text())
    source = shipped("ensemble")
    assert source is not None
    ship = read_ensemble(source)
    assert meta["model"] == str((build / "model").resolve()) and meta["gbt"] == str((build / "gbt").resolve())
    assert (meta["weight"], meta["heuristic"], meta["threshold"]) == (ship["weight"], ship["heuristic"],
                                                                       ship["threshold"])
