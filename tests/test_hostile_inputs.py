"""Hostile inputs, the input side: nothing is read that was not asked for (symbolic links out of an
input folder, file: URLs, the run's own output folder), and no single input stops the run or loses a page (deep
ids, long paths, deep folders, deep JSON, bad bytes in a URL list, ids that collide as file and folder, and
duplicate ids on resume)."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.hostile.folders import deep_chain, remove_deep

from bodyblocks.batch import BatchOptions, iter_jobs, run_batch
from bodyblocks.batch.inputs import (
    MAX_KEY_BYTES,
    MAX_KEY_DEPTH,
    MAX_SEGMENT_BYTES,
    MAX_WALK_DEPTH,
    count_pages,
    safe_key,
)
from bodyblocks.capture import CapturedPage
from bodyblocks.cli import main

posix_links = pytest.mark.skipif(os.name != "posix", reason="symbolic links and paths as POSIX has them")


def article(tag: str) -> str:
    return ("<html><head><title>Relief</title></head><body><div class='nav'><a href='/'>Home</a></div>"
            f"<div class='story'><p>Relief convoys reached the valley on Tuesday, dispatch {tag} said, after three "
            "days of rain, and the roads reopened.</p><p>Residents had waited on the ridge for supplies since the "
            "bridge collapsed, and the first trucks carried water and medicine.</p></div></body></html>")


def run(inputs: list[Path], out: Path, **opts: Any) -> dict:
    run_batch(inputs, out, BatchOptions(extractor="heuristic", progress=False, **opts))
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def texts(out: Path) -> str:
    """Every output file's text, together."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.rglob("*.txt")))


def dataset(folder: Path, pages: dict[str, str], records: list[dict[str, Any] | str]) -> Path:
    """A dataset folder: html/<name>.html.gz for each page, pages.jsonl of the records."""
    (folder / "html").mkdir(parents=True, exist_ok=True)
    for name, html in pages.items():
        (folder / "html" / f"{name}.html.gz").write_bytes(gzip.compress(html.encode("utf-8")))
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    (folder / "pages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


# ---------------------------------------------------------------------------------------- symbolic links
@posix_links
def test_symlinks_out_of_an_input_folder_are_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text(article("SECRET"), encoding="utf-8")
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "good.html").write_text(article("good"), encoding="utf-8")
    os.symlink("/etc/passwd", src / "passwd.html")
    os.symlink(secret, src / "sub" / "shadow.htm")  # as /etc/shadow: a file outside the input
    os.symlink("../good.html", src / "sub" / "inside.html")  # stays inside: read
    os.symlink("../../secret.html", src / "sub" / "relative-out.html")  # out by a relative link
    out = tmp_path / "out"
    report = run([src], out)
    by_id = {p["id"]: p for p in report["pages"]}
    assert set(by_id) == {"good", "passwd", "sub/shadow", "sub/inside", "sub/relative-out"}
    for key in ("passwd", "sub/shadow", "sub/relative-out"):
        assert by_id[key]["status"] == "failed" and by_id[key]["output"] is None
        assert by_id[key]["error"].startswith("outside-input: a symbolic link to ") and "\n" not in by_id[key]["error"]
    assert str(secret.resolve()) in by_id["sub/shadow"]["error"] and "--follow-symlinks" in by_id["passwd"]["error"]
    assert by_id["sub/inside"]["status"] == "ok" and by_id["good"]["status"] == "ok"
    assert report["totals"]["failed"] == 3 and report["totals"]["reasons"] == {"outside-input": 3}
    assert "SECRET" not in texts(out) and "root:" not in texts(out)


@posix_links
def test_follow_symlinks_reads_links_wherever_they_lead_and_a_named_link_is_always_read(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.html"
    secret.write_text(article("ELSEWHERE"), encoding="utf-8")
    src = tmp_path / "in"
    src.mkdir()
    os.symlink(secret, src / "linked.html")
    named = tmp_path / "named.html"
    os.symlink(secret, named)  # named on the command line: what the user asked for
    report = run([src, named], tmp_path / "out-followed", follow_symlinks=True)
    assert [p["status"] for p in report["pages"]] == ["ok", "ok"]
    assert texts(tmp_path / "out-followed").count("ELSEWHERE") == 2
    report = run([named], tmp_path / "out-named")
    assert report["pages"][0]["status"] == "ok" and "ELSEWHERE" in texts(tmp_path / "out-named")


@posix_links
def test_a_dataset_record_through_a_link_out_is_read_only_when_links_are_followed(tmp_path: Path) -> None:
    (tmp_path / "outside.html").write_text(article("OUTSIDE"), encoding="utf-8")
    ds = dataset(tmp_path / "ds", {}, [{"id": "link", "html": "html/link.html"},
                                       {"id": "climb", "html": "../outside.html"}])
    os.symlink(tmp_path / "outside.html", ds / "html" / "link.html")
    report = run([ds], tmp_path / "out")
    assert [p["error"].split(":")[0] for p in report["pages"]] == ["outside-dataset", "outside-dataset"]
    report = run([ds], tmp_path / "out-followed", follow_symlinks=True)
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["link"]["status"] == "ok"  # the link is followed
    assert by_id["climb"]["error"].startswith("outside-dataset")  # a path that climbs out never is


@posix_links
def test_the_cli_takes_follow_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "elsewhere.html").write_text(article("ELSEWHERE"), encoding="utf-8")
    src = tmp_path / "in"
    src.mkdir()
    os.symlink(tmp_path / "elsewhere.html", src / "linked.html")
    base = ["extract", str(src), "--extractor", "heuristic", "--no-progress", "--workers", "1"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 1
    assert "failed (outside-input): 1" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "b"), "--follow-symlinks"]) == 0
    assert "ELSEWHERE" in texts(tmp_path / "b")


# ---------------------------------------------------------------------------------------- URL lists
class FakeCapture:
    """bodyblocks.capture.capture in place of Chromium: an article per URL, and the URLs it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, urls: list[str], **_opts: Any) -> Iterator[CapturedPage]:
        for i, url in enumerate(urls):
            self.asked.append(url)
            yield CapturedPage(i, url, url, article(url.rsplit("/", 1)[-1]), "ok")


def test_a_url_list_fails_every_line_that_is_no_http_url_and_never_captures_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCapture()
    monkeypatch.setattr("bodyblocks.capture.capture", fake)
    urls = tmp_path / "urls.txt"
    urls.write_bytes(b"https://example.org/one\nfile:///etc/passwd\nfile:///proc/self/environ\nfile:///some/dir/\n"
                     b"ftp://example.org/f\njavascript:alert(1)\n/etc/hostname\nhttp://example.org/caf\xe9\n"
                     b"http://example.org/two\n")
    assert count_pages([urls]) == 9  # the invalid byte refuses nothing
    out = tmp_path / "out"
    report = run([urls], out)
    assert fake.asked == ["https://example.org/one", "http://example.org/two"]
    status = [(p["status"], (p["error"] or "").split(":")[0]) for p in report["pages"]]
    assert status == [("ok", "")] + [("failed", "bad-url")] * 7 + [("ok", "")]
    errors = [p["error"] for p in report["pages"] if p["error"]]
    assert errors[0] == "bad-url: not an http or https URL (file:)"
    assert errors[5] == "bad-url: not an http or https URL (no scheme)"
    assert errors[6] == "bad-url: the line is not valid UTF-8"
    assert report["pages"][1]["input"] == "file:///etc/passwd" and report["pages"][1]["output"] is None
    assert "root:" not in texts(out) and "dispatch two said" in texts(out)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "file:///proc/self/environ", "file:///some/dir/",
                                 "http:///no-host", "http://example.org/caf\ufffd"])
def test_bodyblocks_capture_loads_no_local_file_either(url: str) -> None:
    import threading

    from bodyblocks.capture.browser import _Browser
    from bodyblocks.capture.fetch import _fetch, _HostThrottle
    from bodyblocks.capture.settings import CaptureOptions

    page = _fetch(_Browser(CaptureOptions()), 0, url, _HostThrottle(0), threading.Event())
    assert (page.status, page.attempts, page.html) == ("error", 0, "")  # rejected before any browser starts


# ---------------------------------------------------------------------------------------- the output folder
def test_an_output_folder_inside_the_input_folder_is_never_read_back(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a", "b"):
        (src / f"{name}.html").write_text(article(name), encoding="utf-8")
    out = src / "out"
    for _ in range(3):  # review pages (out/review/...html) would be 2 -> 5 -> 8 pages
        report = run([src], out, review=1.0)
        assert report["totals"]["pages"] == 2 and {p["id"] for p in report["pages"]} == {"a", "b"}
        assert list(out.rglob("*.html"))  # there are review pages to read back
    assert count_pages([src], out=out) == 2
    assert count_pages([src]) > 2  # counted without --out, the review pages would be pages


# ---------------------------------------------------------------------------------------- one input, one entry
def test_deep_and_long_ids_get_short_keys_and_the_run_goes_on(tmp_path: Path) -> None:
    records = [{"id": "/".join(["s"] * 1500), "html": "html/deep.html.gz"},  # RecursionError in mkdir
               {"id": "/".join(["x" * 119] * 40), "html": "html/long.html.gz"},  # path over 4,096 bytes
               {"id": "y" * 300 + "/" + "z" * 300, "html": "html/wide.html.gz"},  # segments over 255 bytes
               {"id": "/".join(["s"] * 1499 + ["t"]), "html": "html/deep2.html.gz"}]  # differs at the end only
    pages = {name: article(name) for name in ("deep", "long", "wide", "deep2")}
    ds = dataset(tmp_path / "ds", pages, [*records, {"id": "after", "html": "html/after.html.gz"}])
    (ds / "html" / "after.html.gz").write_bytes(gzip.compress(article("after").encode()))
    out = tmp_path / "out"
    report = run([ds], out)
    assert [p["status"] for p in report["pages"]] == ["ok"] * 5
    keys = [p["id"] for p in report["pages"]]
    assert len(set(keys)) == 5
    for key in keys:
        assert key.count("/") < MAX_KEY_DEPTH and len(key.encode()) <= MAX_KEY_BYTES
        assert all(len(part.encode()) <= MAX_SEGMENT_BYTES for part in key.split("/"))
    for name in pages:
        assert f"dispatch {name} said" in texts(out)


def test_is_done_of_a_name_the_file_system_refuses_is_no_error(tmp_path: Path) -> None:
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import Report

    (tmp_path / "out").mkdir()
    report = Report(tmp_path / "out", "txt", "heuristic")
    try:
        assert report.is_done(Job(key="/".join(["x" * 250] * 20), path="p.html")) is False  # ENAMETOOLONG
    finally:
        report.close()


@posix_links
def test_a_folder_1100_levels_deep_fails_below_the_walk_depth_and_the_top_pages_are_done(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    try:
        deep_chain(src, 1100, {0: article("top").encode(), 3: article("three").encode(),
                               1100: article("bottom").encode()})
        assert count_pages([src]) == 3  # top, three, and the folder not walked
        report = run([src], tmp_path / "out")
        by_status = {p["status"]: [] for p in report["pages"]}
        for p in report["pages"]:
            by_status[p["status"]].append(p)
        assert {p["id"] for p in by_status["ok"]} == {"page", "d/d/d/page"}
        (too_deep,) = by_status["failed"]
        assert too_deep["error"].startswith(f"too-deep: more than {MAX_WALK_DEPTH} folders below ")
        assert too_deep["input"].count("/d") == MAX_WALK_DEPTH + 1
        assert "dispatch top said" in texts(tmp_path / "out") and "bottom" not in texts(tmp_path / "out")
    finally:
        remove_deep(src)


def test_a_record_nested_too_deeply_to_decode_fails_alone(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds", {"good": article("good")},
                 ["[" * 100_000, {"id": "good", "html": "html/good.html.gz"}, '{"id": "x", "html": "a\\u0000b"}'])
    report = run([ds], tmp_path / "out")
    pages = report["pages"]
    assert [p["status"] for p in pages] == ["failed", "ok", "failed"]
    assert pages[0]["error"] == "bad-record: pages.jsonl line 1 is nested too deeply to decode"
    assert pages[2]["error"] == "bad-record: pages.jsonl line 3 has a NUL byte in its html path"


def test_ids_that_collide_as_file_and_folder_both_get_outputs(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds", {n: article(n) for n in ("col", "inner", "rep", "x", "xy")},
                 [{"id": "col", "html": "html/col.html.gz"}, {"id": "col.txt/inner", "html": "html/inner.html.gz"},
                  {"id": "report.json/x", "html": "html/rep.html.gz"}, {"id": "X", "html": "html/x.html.gz"},
                  {"id": "x.TXT/y", "html": "html/xy.html.gz"}])
    out = tmp_path / "out"
    report = run([ds], out)
    assert [p["status"] for p in report["pages"]] == ["ok"] * 5
    for name in ("col", "inner", "rep", "x", "xy"):
        assert f"dispatch {name} said" in texts(out)
    assert (out / "col.txt").is_file() and (out / "col.txt_" / "inner.txt").is_file()
    assert safe_key("a.html/b.md/c.txt") == "a.html_/b.md_/c.txt"  # only folders are renamed


def test_resume_after_a_duplicate_id_is_inserted_earlier_loses_no_page(tmp_path: Path) -> None:
    pages = {n: article(n) for n in ("old", "new", "other")}
    old = {"id": "a", "html": "html/old.html.gz"}
    other = {"id": "b", "html": "html/other.html.gz"}
    ds = dataset(tmp_path / "ds", pages, [old, other])
    out = tmp_path / "out"
    run([ds], out)
    dataset(tmp_path / "ds", pages, [{"id": "a", "html": "html/new.html.gz"}, old, other])  # inserted first
    again = run_batch([ds], out, BatchOptions(extractor="heuristic", progress=False))
    assert (again.ok, again.skipped) == (1, 2)  # the new page under a key of its own; the old one and b are done
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    by_id = {p["id"]: p for p in report["pages"]}
    assert set(by_id) == {"a", "a~2", "b"} and report["totals"]["pages"] == 3
    assert "dispatch old said" in (out / "a.txt").read_text(encoding="utf-8")  # an output keeps its key
    assert "dispatch new said" in (out / "a~2.txt").read_text(encoding="utf-8")
    assert by_id["a"]["input"].endswith("old.html.gz") and by_id["a~2"]["input"].endswith("new.html.gz")
    third = run_batch([ds], out, BatchOptions(extractor="heuristic", progress=False))
    assert (third.ok, third.skipped) == (0, 3)  # nothing moved since: every page done


def test_resume_matches_pages_by_their_file_however_the_input_is_spelled(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "x.html").write_text(article("html"), encoding="utf-8")
    out = tmp_path / "out"
    run([src], out)
    monkeypatch.chdir(tmp_path)
    assert run_batch([Path("in")], out, BatchOptions(extractor="heuristic", progress=False)).skipped == 1
    (src / "x.htm").write_text(article("htm"), encoding="utf-8")  # sorts first: takes the key x
    again = run_batch([Path("in")], out, BatchOptions(extractor="heuristic", progress=False))
    assert (again.ok, again.skipped) == (1, 1)  # x.html keeps its key and output, x.htm takes the next
    assert "dispatch html said" in (out / "x.txt").read_text() and "dispatch htm said" in (out / "x~2.txt").read_text()


def test_iter_jobs_leaves_out_the_output_folder_only_while_walking(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "out" / "review").mkdir(parents=True)
    (src / "a.html").write_text(article("a"), encoding="utf-8")
    (src / "out" / "review" / "a.html").write_text(article("review"), encoding="utf-8")
    assert [j.key for j in iter_jobs([src], out=src / "out")] == ["a"]
    (src / "out" / "b.html").write_text(article("b"), encoding="utf-8")
    # named (--out IN): its pages are asked for, its review pages never (a rerun would read them back)
    assert [j.key for j in iter_jobs([src / "out"], out=src / "out")] == ["b"]


def test_a_review_page_that_cannot_be_written_is_noted_and_the_run_goes_on(tmp_path: Path) -> None:
    pages = tmp_path / "in"
    pages.mkdir()
    for name in ("a", "b"):
        (pages / f"{name}.html").write_text(article(name), encoding="utf-8")
    out = tmp_path / "out"
    (out / "review").mkdir(parents=True)
    (out / "review" / "pages").write_text("a file where the review pages' folder goes", encoding="utf-8")
    report = run([pages], out, review=1.0)
    assert report["totals"]["ok"] == 2 and report["totals"]["failed"] == 0
    assert {p.name for p in out.glob("*.txt")} == {"a.txt", "b.txt"}
    lines = {line["id"]: line for line in report["pages"]}
    assert all(line["review_error"].startswith("review-failed: ") for line in lines.values())
