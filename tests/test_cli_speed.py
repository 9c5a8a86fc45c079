"""benchmarks/cli_speed.py: the commands it times and the ratios it reports."""

import argparse

from benchmarks import cli_speed
from benchmarks.cli_speed import FAST, Run

from bodyblocks.inference import checkpoints


def test_the_fast_preset_is_timed_when_it_is_shipped(tmp_path, monkeypatch):
    cmds = cli_speed.commands(tmp_path / "pages", tmp_path / "out")
    assert (FAST in cmds) == (checkpoints.shipped("fast") is not None)
    monkeypatch.setattr(checkpoints, "SHIPPED", tmp_path)  # nothing shipped: the four commands only
    assert list(cli_speed.commands(tmp_path / "pages", tmp_path / "out")) == [
        "bodyblocks", "trafilatura", "bodyblocks --workers 2", "trafilatura --parallel 2"]


def test_the_report_holds_the_preset_against_trafilaturas_defaults():
    def by(ours: float, fast: float, theirs: float) -> dict[str, list[Run]]:
        return {"bodyblocks": [Run(ours, ours, 100.0)], "trafilatura": [Run(theirs, theirs, 50.0)],
                "bodyblocks --workers 2": [Run(ours, ours, 100.0)],
                "trafilatura --parallel 2": [Run(theirs, theirs, 50.0)],
                FAST: [Run(fast, fast, 90.0)]}

    args = argparse.Namespace(sizes="1,1001", rounds=1, big_rounds=1)
    text = cli_speed.report({1: by(0.5, 0.5, 0.3), 1001: by(20.5, 15.5, 30.3)}, {1: 1, 1001: 1001}, args)
    assert "| 1001 | `--checkpoint fast` against trafilatura's defaults | 1.95 | 1.95 |" in text
    assert "| 1001 | defaults | 1.48 | 1.48 |" in text
    assert f"- `{FAST}`: 15.0 ms" in text and "- `bodyblocks`: 20.0 ms" in text and "- `trafilatura`: 30.0 ms" in text
