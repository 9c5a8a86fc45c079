"""WARC input: HTML responses become pages keyed by record id and URL; every other record is counted with its
reason, and a broken one (malformed, truncated, too large) fails alone while reading goes on."""

from __future__ import annotations

import gzip
import json
import random
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("warcio")

from bodyblocks.batch.inputs import iter_jobs  # noqa: E402
from bodyblocks.batch.warc import Response, is_warc, iter_warc, write_warc  # noqa: E402
from bodyblocks.cli import main  # noqa: E402
from bodyblocks.page.decode import declared_language, decode_bytes  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402

RUSSIAN = ("<html><head><title>Погода</title></head><body><nav><a href='/'>Главная</a></nav><article>"
           "<h1>Погода в городе</h1>"
           + "".join(f"<p>Это абзац номер {i} статьи о погоде в городе, и в нём достаточно слов для текста.</p>"
                     for i in range(6))
           + "</article></body></html>")


def pages() -> dict[str, tuple[bytes, str]]:
    """Synthetic pages: (bytes, gold) in UTF-8 and in GBK whose markup declares no charset."""
    utf8, gold8, _ = synth_page(random.Random(1), template="article", encoding="utf-8", malformation="intact")
    gbk, gold_gbk, _ = synth_page(random.Random(2), template="article", encoding="gbk-undeclared",
                                  malformation="intact")
    assert b"charset" not in gbk.lower()
    return {"utf8": (utf8, gold8), "gbk": (gbk, gold_gbk)}


def member(data: bytes) -> bytes:
    """One gzip member of `data`."""
    return gzip.compress(data)


def hostile_warc(path: Path) -> dict[str, str]:
    """A gzipped WARC of every kind of record; returns the record ids of its three good pages."""
    p = pages()
    good = path.with_name("good.warc.gz")
    ids = write_warc(good, [
        Response("http://example.org/utf8", p["utf8"][0], "text/html; charset=utf-8"),
        Response("http://example.org/gbk", p["gbk"][0], "text/html; charset=GBK",
                 headers=[("Content-Language", "zh-CN")]),
        Response("http://example.org/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png"),
        Response("http://example.org/gone", b"<html><body>Not found</body></html>", status="404 Not Found"),
        Response("http://example.org/ru", RUSSIAN.encode("cp1251"), "text/html; charset=windows-1251"),
    ])
    data = good.read_bytes()
    broken_header = member(b"WARC/1.0\r\nWARC-Type: response\r\n\r\nno length here")
    not_warc = member(b"this is no WARC record at all\r\n\r\n")
    garbage = b"\x00garbage between members\xff" * 3
    tail = path.with_name("tail.warc.gz")
    write_warc(tail, [Response("http://example.org/last", p["utf8"][0])], requests=False)
    cut = member(b"WARC/1.0\r\nContent-Length: 100000\r\n\r\n" + b"x" * 5000)
    path.write_bytes(data + broken_header + garbage + not_warc + tail.read_bytes() + cut[: len(cut) // 2])
    return {"utf8": ids[0], "gbk": ids[1], "ru": ids[4]}


def test_the_reader_keeps_html_responses_and_counts_every_other_record(tmp_path: Path) -> None:
    warc = tmp_path / "crawl.warc.gz"
    ids = hostile_warc(warc)
    items = list(iter_warc(warc))
    skips = [i.skip for i in items if i.skip]
    assert sorted(skips) == ["http-status", "not-html"] + ["request-record"] * 5
    errors = [i.error.split(":", 1)[0] for i in items if i.error]
    assert errors == ["malformed", "malformed", "malformed", "truncated"]  # the bad header, garbage, not WARC, cut
    assert "no Content-Length" in [i.error for i in items if i.error][0]
    found = {i.url: i for i in items if i.body is not None}
    assert list(found) == ["http://example.org/utf8", "http://example.org/gbk", "http://example.org/ru",
                           "http://example.org/last"]  # reading went on after every broken record
    assert found["http://example.org/gbk"].record_id == ids["gbk"]
    assert found["http://example.org/gbk"].charset == "GBK"
    assert found["http://example.org/gbk"].language == "zh"  # Content-Language over <html lang>
    assert found["http://example.org/utf8"].language == "zh"  # the synthetic pages' <html lang="zh-CN">
    assert found["http://example.org/gbk"].body == pages()["gbk"][0]


def test_an_uncompressed_warc_is_read_by_content_length_and_resyncs_after_a_bad_record(tmp_path: Path) -> None:
    p = pages()
    one, two = tmp_path / "a.warc", tmp_path / "b.warc"
    write_warc(one, [Response("http://example.org/1", p["utf8"][0])], gzip=False, requests=False)
    write_warc(two, [Response("http://example.org/2", p["gbk"][0], "text/html; charset=gbk")], gzip=False)
    bad = b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: x\r\n\r\nbroken\r\n\r\n"
    warc = tmp_path / "mixed.warc"
    warc.write_bytes(one.read_bytes() + bad + two.read_bytes() + b"WARC/1.0\r\nContent-Length: 50\r\n\r\nshort")
    items = list(iter_warc(warc))
    assert [i.url for i in items if i.body] == ["http://example.org/1", "http://example.org/2"]
    assert [i.error.split(":", 1)[0] for i in items if i.error] == ["malformed", "truncated"]
    assert is_warc(warc) and not is_warc(tmp_path / "nothing.html")


def test_size_limits_hold_for_payloads_and_decompression_bombs(tmp_path: Path) -> None:
    p = pages()
    warc = tmp_path / "big.warc.gz"
    write_warc(warc, [Response("http://example.org/big", p["utf8"][0]),
                      Response("http://example.org/small", b"<html><body><p>small page</p></body></html>")],
               requests=False)
    items = list(iter_warc(warc, limit=2000))
    assert items[0].error.startswith("too-large:") and items[0].body is None
    assert items[1].body is not None  # the next record is read
    # a member that inflates far past the limit is abandoned, and the member after it still read
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb_member = bomb.compress(b"WARC/1.0\r\nContent-Length: 1\r\n\r\n" + b"\0" * 10_000_000) + bomb.flush()
    after = tmp_path / "after.warc.gz"
    write_warc(after, [Response("http://example.org/after", b"<html><body><p>after the bomb</p></body></html>")],
               requests=False)
    bombed = tmp_path / "bomb.warc.gz"
    bombed.write_bytes(bomb_member + after.read_bytes())
    items = list(iter_warc(bombed, limit=2000))
    errors = [i.error for i in items if i.error]  # the one-byte record is framed; what follows it is the bomb
    assert len(errors) == 1 and errors[0].startswith("too-large:") and "inflates past" in errors[0]
    assert [i.url for i in items if i.body] == ["http://example.org/after"]


def test_the_http_charset_is_one_more_declared_charset_tried_strictly() -> None:
    data = RUSSIAN.encode("cp1251")
    guessed = decode_bytes(data)  # nothing declared: the detector's guess, flagged
    assert guessed.encoding == "cp1251" and "Погода в городе" in guessed.text and guessed.guessed
    decoded = decode_bytes(data, ["windows-1251"])
    assert decoded.encoding == "cp1251" and "Погода в городе" in decoded.text and not decoded.guessed
    assert decoded.declared[0] == "windows-1251"
    # tried strictly: a charset the bytes cannot be is passed over (valid UTF-8 wins before any declared one)
    assert decode_bytes("Погода".encode() * 20, ["shift_jis"]).encoding == "utf-8"
    assert decode_bytes(data, ["utf-7", "no-such-codec", "windows-1251"]).encoding == "cp1251"
    assert declared_language(b'<html class="x" lang="pt-BR">') == "pt"
    assert declared_language(b"<html><body>", "de-AT, en") == "de"
    assert declared_language(b"<html><body>") is None


def test_jobs_of_a_warc_are_keyed_by_position_and_carry_record_id_url_and_charset(tmp_path: Path) -> None:
    warc = tmp_path / "crawl.warc.gz"
    ids = hostile_warc(warc)
    jobs = list(iter_jobs([warc]))
    pages_ = [j for j in jobs if not j.filtered]
    assert [j.key for j in pages_] == [f"crawl/{i:07d}" for i in range(len(pages_))]
    assert [j.position for j in pages_] == list(range(len(pages_)))
    assert {j.source for j in jobs} == {"crawl"}
    assert [j.record_id for j in pages_ if j.url == "http://example.org/gbk"] == [ids["gbk"]]
    assert sum(1 for j in jobs if j.filtered) == 7


def test_extract_a_warc_end_to_end_with_every_failure_counted(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    warc = tmp_path / "crawl.warc.gz"
    ids = hostile_warc(warc)
    out = tmp_path / "out"
    code = main(["extract", str(warc), "--out", str(out), "--format", "jsonl", "--workers", "1", "--no-progress"])
    assert code == 1  # some records failed, the run did not
    err = capsys.readouterr().err
    assert "4 extracted, 4 failed" in err
    assert "failed (malformed): 3" in err and "failed (truncated): 1" in err
    assert "not a page (request-record): 5" in err and "not a page (not-html): 1" in err
    rows = {r["url"] or r["id"]: r for r in map(json.loads, (out / "crawl-00000.jsonl").read_text().splitlines())}
    assert len(rows) == 8
    p = pages()
    gbk = rows["http://example.org/gbk"]
    assert gbk["record_id"] == ids["gbk"] and gbk["encoding"] == "gb18030" and gbk["language"] == "zh"
    assert p["gbk"][1].splitlines()[1] in gbk["text"]  # decoded right: a body line of the gold text
    ru = rows["http://example.org/ru"]
    assert ru["encoding"] == "cp1251" and "Это абзац номер 3" in ru["text"]  # the HTTP charset decided
    failed = [r for r in rows.values() if r["error"]]
    assert sorted(r["error"].split(":", 1)[0] for r in failed) == ["malformed"] * 3 + ["truncated"]
    assert all(r["text"] is None for r in failed)
    report = json.loads((out / "report.json").read_text())
    assert report["this_run"]["filtered"] == {"request-record": 5, "not-html": 1, "http-status": 1}
    assert report["totals"]["reasons"] == {"malformed": 3, "truncated": 1}
    by_id = {line["id"]: line for line in report["pages"]}
    assert by_id[gbk["id"]]["record_id"] == ids["gbk"] and by_id[gbk["id"]]["url"] == "http://example.org/gbk"


def test_a_warc_into_a_file_per_page(tmp_path: Path) -> None:
    warc = tmp_path / "crawl.warc.gz"
    hostile_warc(warc)
    out = tmp_path / "out"
    assert main(["extract", str(warc), "--out", str(out), "--workers", "1", "--no-progress"]) == 1
    assert sorted(f.name for f in (out / "crawl").iterdir()) == [f"{i:07d}.txt" for i in (0, 1, 2, 6)]
    assert "Это абзац номер 0" in (out / "crawl" / "0000002.txt").read_text(encoding="utf-8")


def test_a_warc_that_cannot_be_read_is_a_failed_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.batch import warc as warc_module

    path = tmp_path / "crawl.warc.gz"
    write_warc(path, [Response("http://example.org/a", b"<html><body><p>a page</p></body></html>")])
    real = warc_module.iter_warc

    def failing(p, limit=warc_module.MAX_INPUT_BYTES):  # noqa: ANN001, ANN202 - one record, then a disk error
        items = real(p, limit)
        yield next(items)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(warc_module, "iter_warc", failing)
    jobs = list(iter_jobs([path]))
    assert [j.filtered for j in jobs] == ["request-record", None]
    assert jobs[1].key == "crawl/0000000" and jobs[1].error == "unreadable: Input/output error"


def _records(tmp_path: Path, n: int, words: int = 1) -> list[bytes]:
    """n uncompressed WARC response records, each a page with its number (and `words` words)."""
    plain = tmp_path / "records.warc"
    text = " ".join(["word"] * words)
    write_warc(plain, [Response(f"http://example.org/{i}", f"<html><body><p>page {i} {text}</p></body></html>".encode())
                       for i in range(n)], gzip=False, requests=False)
    data = plain.read_bytes()
    starts = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", data)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _cut(record: bytes) -> bytes:
    """The record with the last 40 bytes of its payload gone (its Content-Length still claims them)."""
    return record[: len(record) - 44] + b"\r\n\r\n"


def _cut_mid_line(record: bytes) -> bytes:
    """The record cut inside its headers, in the middle of a line: the next record's first line runs on from it."""
    return record[: record.index(b"Content-Length") + 10]


def _huge(record: bytes) -> bytes:
    """The record claiming a Content-Length of 999,999,999,999 bytes."""
    return re.sub(rb"Content-Length: \d+", b"Content-Length: 999999999999", record, count=1)


@pytest.mark.parametrize("layout", ["warc", "member", "member-cut", "whole"])
@pytest.mark.parametrize("damage", [_cut, _cut_mid_line, _huge])
def test_a_cut_or_lying_record_fails_alone_and_the_records_after_it_are_read(
    tmp_path: Path, layout: str, damage: Callable[[bytes], bytes]
) -> None:
    records = _records(tmp_path, 5)
    records[1] = damage(records[1])
    if layout == "warc":
        data = b"".join(records)
    elif layout == "member":  # one gzip member per record, the bad record's member whole
        data = b"".join(member(r) for r in records)
    elif layout == "member-cut":  # the bad record's gzip member itself cut short
        members = [member(r) for r in records]
        members[1] = members[1][: len(members[1]) // 2]
        data = b"".join(members)
    else:  # the whole file one gzip member
        data = member(b"".join(records))
    path = tmp_path / ("crawl.warc" if layout == "warc" else "crawl.warc.gz")
    path.write_bytes(data)
    items = list(iter_warc(path, limit=1 << 20))
    assert [i.url for i in items if i.body] == [f"http://example.org/{i}" for i in (0, 2, 3, 4)]
    errors = [i.error for i in items if i.error]
    assert len(errors) == 1 and errors[0].split(":", 1)[0] in ("truncated", "too-large", "malformed"), errors


def test_a_file_gzipped_whole_is_read_record_by_record_under_the_record_limit(tmp_path: Path) -> None:
    records = _records(tmp_path, 3000)
    records.insert(1500, _records(tmp_path, 1, words=6000)[0])  # 30 kB
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(member(b"".join(records)))  # ~1.5 MB in one member: more than the limit and its headers
    items = list(iter_warc(path, limit=20_000))
    assert [i.url for i in items if i.body] == [f"http://example.org/{i}" for i in range(3000)]
    errors = [i.error for i in items if i.error]
    assert len(errors) == 1 and errors[0].startswith("too-large: the record at offset 0 + "), errors


def test_a_cut_member_never_swallows_the_members_after_it(tmp_path: Path) -> None:
    # the cut member's deflate stream runs on into the next members' bytes; on some record ids (random) it inflated
    # them without an error up to the file's end, and the three records after it were lost (9 of 300 files)
    for k in range(60):
        records = _records(tmp_path, 5)
        records[1] = _cut_mid_line(records[1])
        members = [member(r) for r in records]
        members[1] = members[1][: len(members[1]) // 2]
        path = tmp_path / f"crawl{k}.warc.gz"
        path.write_bytes(b"".join(members))
        assert [i.url for i in iter_warc(path, limit=1 << 20) if i.body] == [
            f"http://example.org/{i}" for i in (0, 2, 3, 4)], k
