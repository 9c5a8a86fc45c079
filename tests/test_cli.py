"""A user's mistake on the command line is one line on stderr and exit status 2, with nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bodyblocks.loading.checkpoints import shipped


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bodyblocks", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.html").write_text("<html><body><p>" + "A sentence of body text. " * 20 + "</p></body></html>",
                                            encoding="utf-8")
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    (tmp_path / "badck").mkdir()
    (tmp_path / "badck" / "config.json").write_text("{", encoding="utf-8")
    return tmp_path


MISTAKES = {
    "an unknown option": (["--bogus"], "unknown option --bogus"),
    "a misspelt option": (["--workrs", "1"], "unknown option --workrs (did you mean --workers?"),
    "an unknown extractor": (["--extractor", "modle"], "unknown extractor 'modle'; choose from"),
    "--out is a file": (["--out", "afile"], "is a file"),
    "no such checkpoint": (["--checkpoint", "nothere"], "not a checkpoint folder"),
    "a corrupt config.json": (["--checkpoint", "badck"], "not valid JSON"),
    "cuda without CUDA": (["--extractor", "model", "--device", "cuda"], "no CUDA device"),
    "no pages": (["--input", "empty"], "no pages in empty"),
    "a checkpoint of another kind": (["--extractor", "gbt", "--checkpoint", "MODEL"], "of kind 'model', not 'gbt'"),
    "--no-vote without the ensemble": (["--extractor", "heuristic", "--no-vote"], "--no-vote is an option"),
}


@pytest.mark.parametrize("case", list(MISTAKES))
def test_mistakes_are_one_line_and_exit_2(work: Path, case: str) -> None:
    extra, message = MISTAKES[case]
    if "cuda" in case:
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    if "MODEL" in extra:
        if shipped("model") is None:
            pytest.skip("no shipped model in this checkout")
        extra = [str(shipped("model")) if x == "MODEL" else x for x in extra]
    inputs = ["empty"] if "--input" in extra else ["in"]
    extra = [x for x in extra if x not in ("--input", "empty")]
    out = ["--out", "o"] if "--out" not in extra else []
    res = run("extract", *inputs, *out, *extra, "--no-progress", cwd=work)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message in res.stderr and res.stderr.startswith("bodyblocks extract: ")
    assert not (work / "o").exists()  # nothing written for a run that could not start


def test_debug_shows_the_traceback(work: Path) -> None:
    res = run("--debug", "extract", "in", "--out", "o", "--extractor", "modle", cwd=work)
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_the_help_of_evaluate_and_extract_lists_every_registered_extractor() -> None:
    import argparse

    from bodyblocks.cli import build_parser
    from bodyblocks.loading.registry import extractor_names

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("evaluate", "extract"):
        text = " ".join(sub.choices[command].format_help().split())
        assert "{extractors}" not in text
        missing = [n for n in extractor_names() if f" {n}," not in text and f" {n};" not in text
                   and f" {n} " not in text]
        assert missing == [], (command, missing)
        assert "ensemble" in text and "gbt" in text


@pytest.mark.slow
def test_the_hostile_corpus_cli_scenarios_are_met(tmp_path: Path) -> None:
    from benchmarks.attacks import cli

    missed = [(label, detail) for label, met, detail in cli.scenarios(tmp_path) if not met]
    assert missed == []
