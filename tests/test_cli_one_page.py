"""One page in, its text out: `bodyblocks extract` on a file, standard input or a URL prints the page to standard
output in any format (what a batch would write for it), `segment -` reads standard input; and what a batch run
says: its model before the progress bar, the failed pages by name, the pages of an evaluation without gold."""

from __future__ import annotations

import io
import json
import random
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.test_cli_where import run  # main(argv) in this process: exit status, stdout, stderr

from bodyblocks.batch.columnar import read_shard
from bodyblocks.cli import main
from bodyblocks.training.synth import synth_page


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "pages" / "story.html"
    path.parent.mkdir()
    path.write_bytes(synth_page(random.Random(5))[0])
    return path


@pytest.fixture
def batch(page: Path, tmp_path: Path) -> Path:
    """What `extract --out` writes for the page in txt, json and md."""
    for fmt in ("txt", "json", "md", "jsonl"):
        assert main(["extract", str(page.parent), "--out", str(tmp_path / fmt), "--format", fmt, "--no-progress",
                     "--workers", "1"]) == 0
    return tmp_path


class Site(BaseHTTPRequestHandler):
    """A local web site: /story.html the page, /big a page larger than the cap, /slow one that never ends."""

    page = b""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path == "/story.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.page)))
            self.end_headers()
            self.wfile.write(self.page)
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/story.html")
            self.end_headers()
        elif self.path in ("/elsewhere", "/ftp"):
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd" if self.path == "/elsewhere" else "ftp://127.0.0.1/x")
            self.end_headers()
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site(page: Path) -> Iterator[str]:
    Site.page = page.read_bytes()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("fmt", ["txt", "json", "md", "jsonl"])
def test_one_file_without_out_prints_what_a_batch_writes(fmt: str, page: Path, batch: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["extract", str(page), "--format", fmt], capsys)
    assert code == 0, err
    if fmt == "jsonl":
        assert json.loads(out) == read_shard(next((batch / fmt).glob("pages-*.jsonl")))[0]
    else:
        assert out == (batch / fmt / f"story.{fmt}").read_text(encoding="utf-8")
    assert "story" in out or fmt != "json"


def test_standard_input_is_one_page(page: Path, batch: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(page.read_bytes())))
    code, out, err = run(["extract", "-"], capsys)
    assert code == 0, err
    assert out == (batch / "txt" / "story.txt").read_text(encoding="utf-8") and out.strip()


def test_segment_reads_standard_input(page: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, from_file, _ = run(["segment", str(page)], capsys)
    assert code == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(page.read_bytes())))
    code, from_stdin, err = run(["segment", "-"], capsys)
    assert code == 0, err
    assert from_stdin == from_file and len(from_stdin.splitlines()) > 3


@pytest.mark.parametrize("how", ["-u", "bare", "redirected"])
def test_a_url_is_fetched_and_printed(how: str, site: str, batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{site}/moved" if how == "redirected" else f"{site}/story.html"
    code, out, err = run(["extract", *(["-u", url] if how == "-u" else [url]), "--format", "md"], capsys)
    assert code == 0, err
    assert out == (batch / "md" / "story.md").read_text(encoding="utf-8")


def test_a_url_that_fails_is_one_line_and_exit_1(site: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["extract", f"{site}/nothere"], capsys)
    assert (code, out) == (1, "") and err == f"bodyblocks extract: {site}/nothere: HTTP 404 Not Found\n"
    code, out, err = run(["extract", f"{site}/elsewhere"], capsys)
    assert (code, out) == (1, "") and "file:///etc/passwd" in err and err.count("\n") == 1  # never read
    code, out, err = run(["extract", f"{site}/ftp"], capsys)
    assert (code, out) == (1, "") and "redirected to ftp://127.0.0.1/x, not a web address" in err
    code, out, err = run(["extract", "-u", "ftp://127.0.0.1/x"], capsys)
    assert code == 2 and err == "bodyblocks extract: -u ftp://127.0.0.1/x: not an http:// or https:// address\n"
    code, out, err = run(["extract", "-u", f"{site}/story.html", "--out", "x"], capsys)
    assert code == 2 and "is one page, printed to standard output: drop --out" in err


def test_the_fetch_is_capped_in_size(site: str) -> None:
    from bodyblocks.cli.single import fetch

    with pytest.raises(OSError, match="larger than 100 bytes"):
        fetch(f"{site}/story.html", 5.0, 100)


# --- 5. what a run says --------------------------------------------------------------------------------------
def test_the_model_is_said_before_the_progress_bar(page: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["extract", str(page.parent), "--out", str(tmp_path / "o"), "--workers", "1"], capsys)
    assert code == 0
    assert err.startswith("bodyblocks extract: ensemble ("), err[:200]


def test_the_summary_names_the_failed_pages(page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(7):
        (page.parent / f"bad{i}.html").write_bytes(bytes(range(256)) * 8)  # binary: each fails
    code, _, err = run(["extract", str(page.parent), "--out", str(tmp_path / "o"), "--workers", "1",
                        "--no-progress"], capsys)
    assert code == 1
    named = [line for line in err.splitlines() if line.startswith("  failed page ")]
    assert len(named) == 5 and all("bad" in line and ": binary" in line for line in named), err
    assert f"  ... and 2 more; see {tmp_path / 'o' / 'report.json'}" in err.splitlines()


def test_evaluate_warns_when_pages_have_no_gold(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (page.parent / "other.html").write_bytes(synth_page(random.Random(6))[0])
    (page.parent / "other.txt").write_text("Some gold text of the other page.\n", encoding="utf-8")
    code, _, err = run(["evaluate", str(page.parent), "--extractor", "heuristic", "--workers", "0",
                        "--no-progress"], capsys)
    assert code == 0
    assert "bodyblocks evaluate: warning: pages: 1 of its 2 pages have no gold text (story)" in err
    (page.parent / "other.txt").unlink()
    code, _, err = run(["evaluate", str(page.parent), "--extractor", "heuristic", "--workers", "0",
                        "--no-progress"], capsys)
    assert "2 of its 2 pages have no gold text (other, story): nothing is scored" in err
