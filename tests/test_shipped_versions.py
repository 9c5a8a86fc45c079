"""A checkpoint records what it was made with (config.json's `made_with`: the segmenter's version, a digest of the
block features' names, the labels' version); one made with other blocks or features than this code's reads blocks
it never saw in training, and loading it says so. Every shipped part that records them agrees with the code."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from bodyblocks.classify import integrity
from bodyblocks.loading import checkpoints
from bodyblocks.loading.checkpoints import StaleCheckpoint, load_extractor
from bodyblocks.training.cache import made_with


def _gbt_copy(tmp_path: Path, made: dict[str, str] | None) -> Path:
    folder = tmp_path / "gbt"
    shutil.copytree(checkpoints.SHIPPED / "gbt", folder)
    meta = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    meta.pop("made_with", None)
    if made is not None:
        meta["made_with"] = made
    (folder / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_training_records_the_code_s_block_inputs() -> None:
    assert made_with() == {**integrity.block_inputs(), "labels": made_with()["labels"]}
    assert set(integrity.block_inputs()) == {"segmenter", "features"}


def test_a_checkpoint_made_with_another_segmenter_says_so_at_load(tmp_path: Path) -> None:
    old = dict(made_with(), segmenter="1")
    folder = _gbt_copy(tmp_path, old)
    line = integrity.stale_inputs(folder, json.loads((folder / "config.json").read_text(encoding="utf-8")))
    assert line is not None and "segmenter '1'" in line and "rebuild it" in line and "\n" not in line
    with pytest.warns(StaleCheckpoint, match="segmenter '1'"):
        load_extractor("gbt", folder)


@pytest.mark.parametrize("made", [None, "today"])
def test_a_checkpoint_of_today_s_code_or_of_no_record_loads_quietly(tmp_path: Path, made: str | None) -> None:
    folder = _gbt_copy(tmp_path, made_with() if made else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleCheckpoint)
        load_extractor("gbt", folder)


def test_other_block_features_are_stale_too() -> None:
    line = integrity.stale_inputs("x", {"made_with": dict(made_with(), features="000000000000")})
    assert line is not None and "features '000000000000'" in line


def test_every_shipped_part_that_records_its_inputs_has_the_code_s() -> None:
    folders = [f for f in sorted(checkpoints.SHIPPED.iterdir()) if (f / "config.json").is_file()]
    assert len(folders) >= 3
    stale = [line for f in folders
             if (line := integrity.stale_inputs(f, json.loads((f / "config.json").read_text(encoding="utf-8"))))]
    assert stale == []
