"""What a new user trips on first, through the API and the CLI: a file name given as HTML, a folder, a path
that is not there, an extra not installed, options without help, the output folder's lock, the run's report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

import bodyblocks
from bodyblocks.cli import build_parser, main
from bodyblocks.errors import NotMarkup
from bodyblocks.loading import checkpoints
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.loading.plan import make_plan
from bodyblocks.runtime.extras import install_command

PAGE = ("<html><head><title>Harbour works</title></head><body><nav><a href='/'>Home</a></nav><article>"
        + "".join(f"<p>The harbour works began on Monday, paragraph {i}, and the council said the quay would "
                  "reopen in spring after the old pilings are replaced.</p>" for i in range(6))
        + "</article></body></html>")


@pytest.mark.parametrize("text", ["page.html", "pages/today.htm", "archive/page.html.gz", "C:\\pages\\a.html"])
def test_a_str_that_looks_like_a_missing_file_is_refused_with_what_to_do(text: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ex = bodyblocks.get_extractor("gbt")
    for extract in (bodyblocks.extract, ex.extract):
        with pytest.raises(NotMarkup, match="no such file") as err:
            extract(text)
        assert "pathlib.Path" in str(err.value) and err.value.reason == "path-as-html"


def test_an_address_and_a_folder_given_as_html_are_refused_and_a_folder_path_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(NotMarkup, match="address, not HTML"):
        bodyblocks.extract("https://example.com/news/1")
    with pytest.raises(NotMarkup, match="is a folder, not HTML: extract its pages with `bodyblocks extract"):
        bodyblocks.extract(str(tmp_path))
    with pytest.raises(IsADirectoryError, match="is a folder, not a page: extract its pages"):
        bodyblocks.extract(tmp_path)


def test_text_without_markup_that_is_no_path_is_still_a_page() -> None:
    ex = bodyblocks.get_extractor("gbt")
    got = ex.extract("Just a sentence, no markup at all.")  # segmented as a page (whatever is kept of it)
    assert [b.text for b in got.blocks or []] == ["Just a sentence, no markup at all."]


def test_every_option_of_every_subcommand_has_help_text() -> None:
    def options(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.Action]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += options(sub, f"{prefix} {name}")
            elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
                found.append((prefix, action))
        return found

    found = options(build_parser(), "bodyblocks")
    assert len(found) > 50
    bare = [f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in found if not a.help]
    assert bare == []


def test_a_missing_module_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch: ModuleNotFoundError, as without it
    assert main(["train", "configs/default.yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bodyblocks train: ") and install_command("train") in err and "\n" not in err


def test_a_path_that_does_not_exist_is_a_usage_error_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "a.html"
    page.write_text(PAGE, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["extract", str(page), str(tmp_path / "typo.html"), "--out", str(out), "--extractor",
                 "heuristic", "--no-progress"]) == 2
    captured = capsys.readouterr()  # read once: a second read is empty
    assert "no such file or folder" in captured.err and "typo.html" in captured.err  # it names the missing path
    assert str(page) not in captured.err and captured.out == ""  # and only that one
    assert not out.exists()


def test_a_run_says_its_model_first_leaves_no_lock_and_reports_what_made_the_outputs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    if checkpoints.shipped("fast") is None:
        pytest.skip("checkpoints/ensemble-fast is not shipped in this checkout")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.html").write_text(PAGE, encoding="utf-8")
    out = tmp_path / "out"
    args = ["extract", str(tmp_path / "in"), "--out", str(out), "--checkpoint", "fast", "--engine", "onnx",
            "--device", "cpu", "--workers", "1", "--no-progress"]
    assert main(args) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("bodyblocks extract: ensemble (preset fast: ") and " on onnx, bodyblocks " in first
    assert not (out / ".bodyblocks.lock").exists()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    model = report["model"]
    assert model["preset"] == "fast" and model["engine"] == "onnx" and model["bodyblocks"] == bodyblocks.__version__
    assert Path(model["checkpoint"]) == checkpoints.shipped("fast").resolve()
    assert len(model["model_sha256"]) == 64 and model["model_sha256"][:12] in first
    default = make_plan("ensemble", ExtractOptions(device="cpu")).describe()
    assert default["preset"] == "ensemble" and default["model_sha256"] != model["model_sha256"]
    first_seconds = report["totals"]["seconds"]
    assert first_seconds > 0 and first_seconds == pytest.approx(report["this_run"]["seconds"], abs=0.001)
    assert main(args) == 0  # resumed: the folder's seconds are both runs'
    again = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert again["this_run"]["skipped"] == 1 and not (out / ".bodyblocks.lock").exists()
    assert again["totals"]["seconds"] == pytest.approx(first_seconds + again["this_run"]["seconds"], abs=0.002)


def test_url_list_outputs_are_named_from_the_url() -> None:
    from bodyblocks.batch.inputs import safe_key, url_key

    assert url_key("https://www.example.com/news/story.html") == "example.com/news/story"
    assert url_key("http://127.0.0.1:8080/") == "127.0.0.1_8080/index"
    with_query = url_key("https://example.com/item?id=1")
    assert with_query is not None and with_query.startswith("example.com/item_") and with_query != url_key(
        "https://example.com/item?id=2")
    assert url_key("file:///etc/passwd") is None and url_key("not a url") is None
    assert safe_key(url_key("https://x.com/../../etc/passwd") or "") == "x.com/etc/passwd"  # stays inside OUT


@pytest.mark.slow
def test_the_readmes_python_block_runs_where_quick_start_1_installs_no_torch(tmp_path: Path) -> None:
    """The README's first Python block, run from the repository root as written, with torch, scikit-learn and
    transformers unimportable (what `bash scripts/setup.sh` installs: the extraction package alone)."""
    import re
    import subprocess

    from tests.test_onnx import _NO_TORCH

    from bodyblocks.runtime.files import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    api = readme[readme.index("## Python API"):]
    block = re.search(r"```python\n(.*?)```", api, re.S)
    assert block is not None and "/tmp/bodyblocks-md" in block.group(1)
    code = block.group(1).replace("/tmp/bodyblocks-md", str(tmp_path / "md"))
    run = subprocess.run([sys.executable, "-c", _NO_TORCH + code], capture_output=True, text=True, cwd=REPO_ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Millbrook Public Library opened" in run.stdout
    assert (tmp_path / "md" / "article-en.md").read_text(encoding="utf-8").startswith("---\n")
    assert "load(\"accurate\")" not in block.group(1)  # it needs torch: in a block of its own, with its extras
