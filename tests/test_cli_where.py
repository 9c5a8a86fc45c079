"""The command line where its users are: install hints that work from where bodyblocks was installed, missing
extras and bad option values found before a run (one line in the option's words, exit status 2, nothing
written), and what a run says (its model before the progress bar, the failed pages by name, pages without gold)."""

from __future__ import annotations

import json
import random
import shlex
import sys
from pathlib import Path

import pytest

import bodyblocks.runtime.extras as extras
from bodyblocks.cli import main
from bodyblocks.training.synth import synth_page

REPO = Path(__file__).resolve().parents[1]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """main(argv) in this process: its exit status (argparse's SystemExit too), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "story.html"
    path.write_bytes(synth_page(random.Random(3))[0])
    return path


# --- 1. install hints ---------------------------------------------------------------------------------------
def test_from_a_checkout_the_hint_installs_the_checkout_with_this_interpreters_pip(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "_pip_version", lambda: (25, 1))
    pip = f"{shlex.quote(sys.executable)} -m pip"
    assert extras.install_command("peers") == f"{pip} install -e {shlex.quote(str(REPO) + '[peers]')}"
    with pytest.raises(ImportError) as err:
        monkeypatch.setitem(sys.modules, "warcio", None)
        extras.require("warcio", "reading WARC files")
    assert str(err.value).endswith(f"({pip} install -e {shlex.quote(str(REPO) + '[scale]')})")


def test_a_pip_too_old_for_the_peers_is_upgraded_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "_pip_version", lambda: (23, 2))
    pip = f"{shlex.quote(sys.executable)} -m pip"
    assert extras.install_command("peers").startswith(f"{pip} install -U pip && {pip} install -e ")


def test_an_install_from_a_folder_or_wheel_names_it_and_one_from_an_index_names_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "site-packages" / "bodyblocks" / "runtime" / "extras.py"  # no checkout around it
    wheel = tmp_path / "bodyblocks-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    records = {"folder": {"url": REPO.as_uri(), "dir_info": {}},
               "editable": {"url": REPO.as_uri(), "dir_info": {"editable": True}},
               "wheel": {"url": wheel.as_uri(), "archive_info": {}},
               "gone": {"url": (tmp_path / "gone").as_uri(), "dir_info": {}},
               "vcs": {"url": "https://github.com/x/bodyblocks", "vcs_info": {"vcs": "git"}}}

    class Dist:
        def __init__(self, record: dict[str, object]) -> None:
            self.record = record

        def read_text(self, name: str) -> str:
            return json.dumps(self.record)

    got = {}
    for name, record in records.items():
        monkeypatch.setattr(extras.importlib.metadata, "distribution", lambda _n, r=record: Dist(r))
        got[name] = extras.install_source(module)
    assert got == {"folder": (str(REPO), False), "editable": (str(REPO), True), "wheel": (str(wheel), False),
                   "gone": None, "vcs": None}
    monkeypatch.setattr(extras, "install_source", lambda: None)
    monkeypatch.setattr(extras, "_pip_version", lambda: (25, 1))
    assert extras.install_command("gpu,e5").endswith(" -m pip install 'bodyblocks[gpu,e5]'")


def test_a_missing_module_names_the_command_for_this_checkout(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    code, _, err = run(["train", "configs/default.yaml"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert extras.install_command("train") in err and "pip install 'bodyblocks[" not in err


def test_setup_upgrades_pip_before_any_install() -> None:
    lines = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8").splitlines()
    installs = [i for i, line in enumerate(lines) if '-m pip install' in line and not line.lstrip().startswith("#")]
    upgrade = [i for i in installs if "--upgrade pip" in lines[i]]
    assert upgrade and upgrade[0] == installs[0]
    assert not lines[upgrade[0]].startswith(" ")  # at the top level: the plain setup (quick start 1) too


# --- 2. missing extras before the run ------------------------------------------------------------------------
def test_a_url_list_without_a_browser_is_one_line_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "selenium", None)
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.com/a\nhttps://example.com/b\n", encoding="utf-8")
    code, _, err = run(["extract", str(urls), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    assert code == 2, err
    assert err.startswith("bodyblocks extract: URL lists need a browser: ") and err.count("\n") == 1
    assert "internal error" not in err and not (tmp_path / "out").exists()
    code, out, err = run(["extract", "-u", "http://127.0.0.1:9/", "--browser"], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("bodyblocks extract: pages rendered with --browser need a browser: ")


def test_evaluate_with_a_peer_not_installed_is_one_line_before_any_page(
        page: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "trafilatura", None)
    code, out, err = run(["evaluate", str(page.parent), "--extractor", "heuristic", "trafilatura",
                          "--workers", "0", "--no-progress"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("bodyblocks evaluate: extractor 'trafilatura' needs trafilatura") and err.count("\n") == 1
    assert extras.install_command("peers") in err
    code, out, err = run(["extract", str(page), "--extractor", "trafilatura"], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and extras.install_command("peers") in err


# --- 4. messages in the options' words -----------------------------------------------------------------------
MESSAGES = {
    "--threads -3": "--threads: -3 is too small: give 0 or more",
    "--threads abc": "--threads: 'abc' is not a whole number",
    "--workers -2": "--workers: -2 is too small: give 0 or more (0 or 1: no worker processes)",
    "--shard-size 0": "--shard-size: 0 is too small: give 1 or more",
    "--page-timeout 0": "--page-timeout: 0 is too small: give 1 or more",
    "--review 2": "--review: 2 is not a share",
    "--format xml": "--format: invalid choice: 'xml'",
    "--out /etc/passwd/x": "--out /etc/passwd/x cannot be made: /etc/passwd is a file, not a folder",
}


@pytest.mark.parametrize("option", list(MESSAGES))
def test_a_bad_option_value_is_one_line_in_the_options_words(option: str, page: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = [] if "--out" in option else ["--out", str(page.parent / "o")]
    code, _, err = run(["extract", str(page), *out, *option.split()], capsys)
    assert code == 2
    assert err.startswith(f"bodyblocks extract: {MESSAGES[option]}") and err.count("\n") == 1, err
    assert not (page.parent / "o").exists()


def test_cuda_without_cuda_is_said_in_the_options_words(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = run(["extract", str(page), "--device", "cuda"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--device cuda: torch finds no CUDA device" in err and "device='cpu'" not in err


def test_an_unknown_command_is_named_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["extrakt", "page.html", "--out", "x"], capsys)
    assert code == 2
    assert err == "bodyblocks: unknown command extrakt (did you mean extract? bodyblocks --help lists the commands)\n"
    code, _, err = run(["data", "sinth"], capsys)
    assert code == 2 and err.startswith("bodyblocks data: unknown command sinth (did you mean synth?")


def test_folders_lists_and_warcs_need_out_in_one_line(tmp_path: Path, page: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.com/a\n", encoding="utf-8")
    warc = tmp_path / "crawl.warc.gz"
    warc.write_bytes(b"")
    for argv, said in (([str(page.parent)], "is a folder: its pages need --out DIR"),
                       ([str(urls)], "is a URL list: its pages need --out DIR"),
                       ([str(warc)], "is a WARC file: its pages need --out DIR"),
                       ([str(page), str(page)], "2 inputs need --out DIR")):
        code, out, err = run(["extract", *argv], capsys)
        assert code == 2 and out == "" and said in err and err.count("\n") == 1, err


def test_workers_zero_is_explained_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["extract", "--help"], capsys)
    assert code == 0
    assert "0 or 1: no worker processes" in " ".join(out.split())


def test_capture_options_are_checked_in_their_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.com/a\n", encoding="utf-8")
    for option, said in (("--concurrency 0", "--concurrency: 0 is too small: give 1 or more"),
                         ("--timeout -1", "--timeout: -1 is no time limit: give seconds, more than 0")):
        code, _, err = run(["capture", str(urls), "--out", str(tmp_path / "o"), *option.split()], capsys)
        assert code == 2 and err.startswith(f"bodyblocks capture: {said}") and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()
