"""WARC resynchronisation never fabricates a record: a record whose payload quotes a whole WARC record stays one
page whatever follows it (junk, NUL padding, a damaged record, a missing or wrong Content-Length), in a .warc, one
gzip member per record and a file gzipped whole; what reading skipped is counted in a reported error."""

from __future__ import annotations

import gzip
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("warcio")

from bodyblocks.batch.warc import Response, WarcItem, iter_warc, write_warc  # noqa: E402

FAKE = "http://fake.example/quoted"
QUOTING = "http://example.org/how-warc-works"


def _record(tmp_path: Path, url: str, body: bytes) -> bytes:
    """One uncompressed WARC response record (with its CRLF CRLF trailer)."""
    path = tmp_path / "one.warc"
    write_warc(path, [Response(url, body)], gzip=False, requests=False)
    return path.read_bytes()


def _page(text: str) -> bytes:
    return f"<html><body><article><p>{text}</p></article></body></html>".encode()


def _quoting(tmp_path: Path) -> bytes:
    """A record whose HTML payload quotes a whole WARC record, CRLFs and trailer included, amid more markup."""
    quoted = _record(tmp_path, FAKE, _page("a page that only exists inside another page"))
    body = (b"<html><body><article><h1>How a WARC record looks</h1><p>Here is one, byte for byte:</p><pre>"
            + quoted + b"</pre><p>Its headers end with a blank line, then come the bytes it counts.</p>"
            + b"</article></body></html>")
    return _record(tmp_path, QUOTING, body)


def _good(tmp_path: Path, n: int) -> bytes:
    return _record(tmp_path, f"http://example.org/good{n}", _page(f"good page {n}"))


def _without_length(record: bytes) -> bytes:
    return re.sub(rb"Content-Length: \d+\r\n", b"", record, count=1)


def _length_off_by(record: bytes, delta: int) -> bytes:
    n = int(re.search(rb"Content-Length: (\d+)", record).group(1))
    return re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (n + delta), record, count=1)


def _damages(tmp_path: Path) -> dict[str, tuple[list[bytes], list[str], int]]:
    """Each damage: the file's records (in order), the pages to read from them, the errors to report."""
    q, g1, g2 = _quoting(tmp_path), _good(tmp_path, 1), _good(tmp_path, 2)
    ok = [QUOTING, "http://example.org/good1"]
    return {
        "trailing-junk": ([q, b"garbage a crashed tool left behind, no record at all"], [QUOTING], 1),
        "junk-between": ([q, b"garbage\r\nmore garbage", g1], ok, 1),
        "nul-padding": ([q, b"\0" * 4096], [QUOTING], 1),
        "nul-padding-between": ([q, b"\0" * 4096, g1], ok, 1),
        "damaged-next": ([q, b"WARX" + q[4:], g1], ok, 1),  # its version line broken: skipped whole
        "next-start-lost": ([q, q[200:], g1], ok, 1),  # a record's first 200 bytes gone
        "missing-length": ([q, _without_length(q), g1], ok, 1),
        "length-short": ([q, _length_off_by(q, -300), g1], [QUOTING, QUOTING, "http://example.org/good1"], 1),
        "length-long": ([q, _length_off_by(q, 50), g1, g2], ok + ["http://example.org/good2"], 1),
        "length-long-last": ([g1, q, _length_off_by(q, 5000)], ["http://example.org/good1", QUOTING], 1),
    }


DAMAGES = ["trailing-junk", "junk-between", "nul-padding", "nul-padding-between", "damaged-next", "next-start-lost",
           "missing-length", "length-short", "length-long", "length-long-last"]


def _write(path: Path, parts: list[bytes], layout: str) -> None:
    if layout == "warc":
        path.write_bytes(b"".join(parts))
    elif layout == "members":  # a gzip member per record, junk and padding between members left as they are
        path.write_bytes(b"".join(gzip.compress(p) if p.startswith(b"WARC/1.") or b"WARC-Type" in p else p
                                  for p in parts))
    else:
        path.write_bytes(gzip.compress(b"".join(parts)))


def _read(tmp_path: Path, parts: list[bytes], layout: str) -> list[WarcItem]:
    path = tmp_path / ("crawl.warc" if layout == "warc" else "crawl.warc.gz")
    _write(path, parts, layout)
    return list(iter_warc(path, limit=1 << 20))


@pytest.mark.parametrize("layout", ["warc", "members", "whole"])
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_quoted_record_never_becomes_a_page_and_the_quoting_one_stays_intact(
    tmp_path: Path, layout: str, damage: str
) -> None:
    parts, pages, n_errors = _damages(tmp_path)[damage]
    items = _read(tmp_path, parts, layout)
    assert FAKE not in [i.url for i in items]  # no record made from a quote
    assert not any(b"only exists inside another page" in (i.body or b"") and i.url != QUOTING for i in items)
    assert [i.url for i in items if i.body is not None] == pages
    errors = [i.error for i in items if i.error]
    assert len(errors) == n_errors, errors
    assert re.search(r"\d+ bytes", errors[0]), errors  # what was skipped is counted


def test_skipped_bytes_are_counted_in_the_error(tmp_path: Path) -> None:
    q, g1 = _quoting(tmp_path), _good(tmp_path, 1)
    junk = b"x" * 1000 + b"\r\n" + b"\0" * 500
    items = _read(tmp_path, [q, junk, g1], "warc")
    errors = [i.error for i in items if i.error]
    assert errors == [f"malformed: {len(junk)} bytes that are no WARC record (offset {len(q)})"]
    assert items[-1].url == "http://example.org/good1" and items[-1].body is not None
    # a record without a Content-Length: its headers and payload skipped to the next record, and counted
    bad = _without_length(q)
    items = _read(tmp_path, [g1, bad, g1], "warc")
    errors = [i.error for i in items if i.error]
    assert errors == [f"malformed: no Content-Length in the WARC headers (offset {len(g1)}; {len(bad)} bytes "
                      "skipped)"], errors


def test_nul_padding_between_gzip_members_is_reported(tmp_path: Path) -> None:
    g1, g2 = _good(tmp_path, 1), _good(tmp_path, 2)
    items = _read(tmp_path, [g1, b"\0" * 4096, g2], "members")
    assert [i.url for i in items if i.body is not None] == ["http://example.org/good1", "http://example.org/good2"]
    assert [i.error for i in items if i.error] == [
        f"malformed: 4096 bytes at offset {len(gzip.compress(g1))} that are no gzip member"]
    # blank lines between members are no damage
    items = _read(tmp_path, [g1, b"\r\n\r\n", g2], "members")
    assert [i.error for i in items if i.error] == []


@pytest.mark.parametrize("layout", ["warc", "members", "whole"])
def test_a_target_uri_ending_in_a_version_is_read(tmp_path: Path, layout: str) -> None:
    odd = _record(tmp_path, "http://example.org/spec/WARC/1.0", _page("the version's own page"))
    odd11 = _record(tmp_path, "http://example.org/WARC/1.1", _page("the next version's page"))
    items = _read(tmp_path, [_good(tmp_path, 1), odd, odd11, _good(tmp_path, 2)], layout)
    assert [i.url for i in items if i.body is not None] == [
        "http://example.org/good1", "http://example.org/spec/WARC/1.0", "http://example.org/WARC/1.1",
        "http://example.org/good2"]
    assert [i.error for i in items if i.error] == []


def test_headers_cut_inside_a_value_by_the_next_record_fail_alone(tmp_path: Path) -> None:
    # the next record joins a cut Target-URI: the merged headers hold two records' fields, so it is a cut
    g1, g2, g3 = _good(tmp_path, 1), _good(tmp_path, 2), _good(tmp_path, 3)
    cut = g2[: g2.index(b"http://example.org/good2") + 15]
    items = _read(tmp_path, [g1, cut, g3], "warc")
    assert [i.url for i in items if i.body is not None] == ["http://example.org/good1", "http://example.org/good3"]
    assert [i.error.split(":", 1)[0] for i in items if i.error] == ["truncated"]


@pytest.mark.parametrize("layout", ["warc", "members", "whole"])
def test_every_damage_in_one_file_loses_no_record_between_them(tmp_path: Path, layout: str) -> None:
    # each intact record sits between two kinds of damage: it is still read, by its length, and no quote is
    q, g1 = _quoting(tmp_path), _good(tmp_path, 1)
    damage = [b"junk a crashed tool left", b"\0" * 4096, b"WARX" + q[4:], q[150:], _without_length(q),
              _length_off_by(q, -300)]
    items = _read(tmp_path, [x for d in damage for x in (q, d)] + [g1], layout)
    assert FAKE not in [i.url for i in items]
    assert [i.url for i in items if i.body is not None] == [QUOTING] * 7 + ["http://example.org/good1"]
    errors = [i.error for i in items if i.error]
    assert len(errors) == 6 and all(re.search(r"\d+ bytes", e) for e in errors), errors
    assert sum("skipped by its Content-Length" in e for e in errors) == 2  # the two whose version line is lost


HOSTILE = {  # 512 KiB each, dense with version lines that start no record
    "version-lines": b"junk" + b"WARC/1.0\r\n" * 52_000,
    "joined-headers": b"WARC/1.0\r\n" + b"a: WARC/1.0\r\n" * 40_000 + b"\r\n\r\n",
    "empty-records-then-junk": b"WARC/1.0\r\nContent-Length: 0\r\n\r\nX" * 16_000,
    "chain-then-junk": b"WARC/1.0\r\nContent-Length: 524288\r\n\r\n" + b"WARC/1.0\r\nContent-Length: 1\r\n\r\nx\r\n\r\n"
                       * 14_000 + b"JUNK",
}


@pytest.mark.parametrize("layout", ["warc", "whole"])
@pytest.mark.parametrize("shape", list(HOSTILE))
def test_hostile_bytes_are_scanned_in_bounded_time_into_few_errors(tmp_path: Path, layout: str, shape: str) -> None:
    start = time.process_time()
    items = _read(tmp_path, [HOSTILE[shape]], layout)
    assert time.process_time() - start < 5  # each byte framed a bounded number of times (measured under 0.3 s)
    assert len(items) <= 2 and all(i.body is None for i in items), [i.error for i in items][:3]
    errors = [i.error for i in items if i.error]  # (the first empty record of one shape is a record)
    assert errors and all(re.search(r"\d+ bytes", e) for e in errors), errors


def test_back_to_back_quotes_inside_a_record_claiming_too_much_are_no_records(tmp_path: Path) -> None:
    # the record claims 50 bytes past its end: a real record starts inside its claimed bytes (the next one), and
    # the three records quoted one after another in its payload are followed back to their end, in the payload
    q3 = _record(tmp_path, FAKE, _page("one")) + _record(tmp_path, FAKE, _page("two")) * 2
    page = _record(tmp_path, QUOTING, b"<html><body><pre>" + q3 + b"</pre><p>end</p></body></html>")
    items = _read(tmp_path, [_length_off_by(page, 50), _good(tmp_path, 1), _good(tmp_path, 2)], "whole")
    assert FAKE not in [i.url for i in items]
    assert [i.url for i in items if i.body is not None] == ["http://example.org/good1", "http://example.org/good2"]
    assert [i.error.split(" is ", 1)[1][:9] for i in items if i.error] == ["cut short"]


def test_a_too_large_record_followed_by_padding_is_skipped_by_its_length(tmp_path: Path) -> None:
    big = _record(tmp_path, "http://example.org/big", _page("x " * 3000) + b"<pre>" + _quoting(tmp_path) + b"</pre>")
    path = tmp_path / "big.warc"
    path.write_bytes(big + b"\0" * 100 + _good(tmp_path, 1))
    items = list(iter_warc(path, limit=4000))
    assert [i.error.split(":", 1)[0] for i in items if i.error] == ["too-large", "malformed"]
    assert "bytes skipped" not in items[0].error  # skipped by its Content-Length, not searched
    assert [i.url for i in items if i.body is not None] == ["http://example.org/good1"]
    assert items[1].error == f"malformed: 100 bytes that are no WARC record (offset {len(big)})"


def test_the_run_report_counts_what_was_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from bodyblocks.cli import main

    q, g1 = _quoting(tmp_path), _good(tmp_path, 1)
    warc = tmp_path / "crawl.warc.gz"
    _write(warc, [q, b"\0" * 4096, q, b"WARX" + q[4:], g1], "whole")
    out = tmp_path / "out"
    code = main(["extract", str(warc), "--out", str(out), "--format", "jsonl", "--workers", "1", "--no-progress",
                 "--extractor", "heuristic"])
    assert code == 1  # some entries failed, the run did not
    assert "3 extracted, 2 failed" in capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["reasons"] == {"malformed": 2}
    errors = sorted(p["error"] for p in report["pages"] if p["error"])
    assert errors[0].startswith("malformed: 4096 bytes that are no WARC record (offset 0 + ")
    assert errors[1].startswith("malformed: a record with no WARC/1.0 or WARC/1.1 line (offset 0 + ")
    assert errors[1].endswith(f"; {len(q) - 4} bytes skipped by its Content-Length)")  # then its CRLF CRLF
    rows = [json.loads(line) for line in (out / "crawl-00000.jsonl").read_text().splitlines()]
    assert FAKE not in [r["url"] for r in rows]
    assert [r["url"] for r in rows if not r["error"]] == [QUOTING, QUOTING, "http://example.org/good1"]
