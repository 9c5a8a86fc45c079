"""Attacks on WARC inputs and URL lists: a WARC gzipped whole, cut and lying records, a page that spins forever.

- A WARC of 20,000 records (76 MiB inflated, more than the 64 MiB record limit) gzipped whole, as one gzip member:
  every record is a page, read as a stream in linear time (it was one `too-large` record; below that size, the
  reading was quadratic: 83,000 small records gave 8,448 pages in 600 s).
- A cut record and one claiming `Content-Length: 999999999999`, followed by good records, in a .warc, a .warc.gz
  of one gzip member per record and a .warc.gz gzipped whole: both fail, every good record after them is a page
  (they ended the file).
- A page whose payload quotes a whole WARC record, followed by trailing junk, 4 KiB of NUL padding, a record whose
  version line is broken, one without a Content-Length and one whose Content-Length is 300 bytes short (each
  quoting the record too), in the same three layouts: the quoted record never becomes a page (it did, with its own
  URL, and the quoting page failed as cut short), and each stretch of skipped bytes is a failed entry counting them.
- 8 MiB dense with `WARC/1.0` lines that start no record (9 shapes: bare lines, lines ending header values, headers
  joined, empty or chained records before junk, NUL runs, damaged headers), plain and gzipped whole, read by
  `iter_warc` in-process: each in bounded CPU into one or two errors (838,861 errors before, one shape over 120 s).
- A URL list with a page running `while(true){}` among good ones (needs Debian's chromium and chromium-driver;
  the target is skipped, with its reason, without them): the pages after it are captured (they all timed out).

Each run is `python -m bodyblocks extract ... --extractor heuristic` in a subprocess, from the repository.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bodyblocks.runtime.files import REPO_ROOT

Target = tuple[str, bool, str]
WHOLE_RECORDS = 20_000
WHOLE_LIMIT_S = 180.0  # measured 40 s on 2 shared cores; quadratic reading or a too-large member fails it
SPIN_LIMIT_S = 90.0  # 6 URLs, a 3 s capture timeout, one retry of the spinning page; measured 20 s
PARAGRAPH = ("This paragraph of page {i} is the body of an article, long enough to be kept by any extractor, and "
             "it goes on for a while so that a record holds a few kilobytes of markup like a small real page. ")


def scenarios(root: Path) -> list[Target]:
    return [whole_gzip(root / "whole"), cut_records(root / "cut"), quoted_records(root / "quoted"),
            dense_version_lines(root / "dense"), spinning_page(root / "spin")]


def _page(i: int, paragraphs: int = 1) -> bytes:
    body = "".join(f"<p>{PARAGRAPH.format(i=i)}</p>" for _ in range(paragraphs))
    return f"<html><head><title>Page {i}</title></head><body><article>{body}</article></body></html>".encode()


def _extract(inputs: list[Path], out: Path, *flags: str, timeout: float = 600) -> tuple[dict[str, Any], float, str]:
    """report.json, seconds and stderr of one run."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--extractor", "heuristic", *flags]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace", timeout=timeout)
        err = proc.stderr
    except subprocess.TimeoutExpired:
        err = f"killed after {timeout:g} s"
    seconds = time.monotonic() - start
    try:
        return json.loads((out / "report.json").read_text(encoding="utf-8")), seconds, err
    except (OSError, ValueError):
        return {"pages": [], "totals": {}}, seconds, err

def _layouts(root: Path, files: dict[str, bytes]) -> tuple[dict[str, list[dict[str, Any]]], float, str]:
    """Each WARC layout written to ROOT/in and extracted in one run: its report's pages by file, seconds, stderr."""
    src = root / "in"
    src.mkdir()
    for name, data in files.items():
        (src / name).write_bytes(data)
    report, seconds, err = _extract([src / name for name in files], root / "out", "--workers", "1")
    pages = {name: [p for p in report.get("pages", []) if Path(p.get("input") or "").name == name] for name in files}
    return pages, seconds, err



def _records(path: Path, pages: list[bytes]) -> list[bytes]:
    """The pages as uncompressed WARC response records (one bytes object each), written to `path` too."""
    from bodyblocks.batch.warc import Response, write_warc

    write_warc(path, [Response(f"http://example.org/{i}", page) for i, page in enumerate(pages)], gzip=False,
               requests=False)
    data = path.read_bytes()
    starts = [m.start() for m in re.finditer(rb"(?m)^WARC/1\.[01]\r\n", data)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def whole_gzip(root: Path) -> Target:
    """Many records in one gzip member: every one a page, in linear time."""
    from bodyblocks.batch.warc import Response, write_warc

    root.mkdir(parents=True)
    plain, whole = root / "crawl.warc", root / "in" / "whole.warc.gz"
    whole.parent.mkdir()
    write_warc(plain, [Response(f"http://example.org/{i}", _page(i, 18)) for i in range(WHOLE_RECORDS)], gzip=False,
               requests=False)
    inflated = plain.stat().st_size
    with open(plain, "rb") as src, gzip.open(whole, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    plain.unlink()
    report, seconds, err = _extract([whole], root / "out", "--workers", "1")
    totals = report.get("totals", {})
    ok = totals.get("ok", 0)
    met = ok == WHOLE_RECORDS and not totals.get("failed") and seconds <= WHOLE_LIMIT_S and "Traceback" not in err
    return (f"WARC gzipped whole: {WHOLE_RECORDS:,} pages in linear time", met,
            f"{ok:,}/{WHOLE_RECORDS:,} ok, {totals.get('failed')} failed, {seconds:.1f} s (limit {WHOLE_LIMIT_S:g} s), "
            f"{inflated / 2**20:.0f} MiB inflated in {whole.stat().st_size / 2**20:.1f} MiB"
            + (", traceback in stderr" if "Traceback" in err else ""))


def cut_records(root: Path) -> Target:
    """A cut record and a lying Content-Length, each followed by good records, in three layouts."""
    root.mkdir(parents=True)
    records = _records(root / "records.warc", [_page(i) for i in range(6)])
    records[1] = records[1][: len(records[1]) // 2]  # cut short: its Content-Length claims the rest
    records[3] = re.sub(rb"Content-Length: \d+", b"Content-Length: 999999999999", records[3], count=1)
    files = {"plain.warc": b"".join(records),
             "members.warc.gz": b"".join(gzip.compress(r) for r in records),
             "whole.warc.gz": gzip.compress(b"".join(records))}
    by_file, seconds, err = _layouts(root, files)
    found = []
    for name, pages in by_file.items():
        ok = sorted(p.get("url") or "" for p in pages if p.get("status") == "ok")
        failed = [(p.get("error") or "").split(":", 1)[0] for p in pages if p.get("status") == "failed"]
        good = ok == [f"http://example.org/{i}" for i in (0, 2, 4, 5)] and len(failed) == 2
        found.append((name, good, f"{name} {len(ok)} ok, failed {'+'.join(failed) or 'none'}"))
    met = all(good for _, good, _ in found) and "Traceback" not in err
    return ("WARC: cut record, Content-Length 999999999999", met,
            "; ".join(detail for _, _, detail in found) + f" (4 ok, 2 failed each wanted; {seconds:.1f} s)"
            + (", traceback in stderr" if "Traceback" in err else ""))


FAKE_URL = "http://fake.example/quoted"


def quoted_records(root: Path) -> Target:
    """A page quoting a WARC record, each kind of damage after it, in three layouts: no page made from the quote."""
    root.mkdir(parents=True)
    quoted = b"".join(_records(root / "quoted.warc", [_page(0)])).replace(b"http://example.org/0", FAKE_URL.encode())
    page = _page(1).replace(b"</article>", b"<pre>" + quoted + b"</pre><p>That was one record.</p></article>")
    quoting, good = _records(root / "records.warc", [_page(0), page, _page(2)])[1:]

    def cl(record: bytes, delta: int) -> bytes:
        n = int(re.search(rb"Content-Length: (\d+)", record).group(1))  # type: ignore[union-attr]
        return re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (n + delta), record, count=1)

    damaged = [b"junk a crashed tool left, no record", b"\0" * 4096, b"WARX" + quoting[4:],
               re.sub(rb"Content-Length: \d+\r\n", b"", quoting, count=1), cl(quoting, -300)]
    parts = [x for d in damaged for x in (quoting, d)] + [good]
    files = {"plain.warc": b"".join(parts),
             "members.warc.gz": b"".join(gzip.compress(p) if b"WARC-Type" in p else p for p in parts),
             "whole.warc.gz": gzip.compress(b"".join(parts))}
    by_file, seconds, err = _layouts(root, files)
    found = []
    for name, pages in by_file.items():
        ok = [p.get("url") or "" for p in pages if p.get("status") == "ok"]
        failed = [p.get("error") or "" for p in pages if p.get("status") == "failed"]
        good_ok = ok.count("http://example.org/1") == 6 and "http://example.org/2" in ok  # the short one too
        counted = len(failed) == 5 and all(re.search(r"\d+ bytes", e) for e in failed)
        found.append((FAKE_URL not in ok and good_ok and counted,
                      f"{name} {len(ok)} ok ({ok.count(FAKE_URL)} fabricated), {len(failed)} failed"))
    met = all(good for good, _ in found) and "Traceback" not in err
    return ("WARC: a payload quoting a record, damage after it", met,
            "; ".join(detail for _, detail in found) + f" (7 ok, 0 fabricated, 5 failed each wanted; {seconds:.1f} s)"
            + (", traceback in stderr" if "Traceback" in err else ""))


DENSE_BYTES = 8 << 20
DENSE_LIMIT_S = 10.0  # CPU seconds for one file; measured 0.02 to 2.8 s on 2 shared cores


def _dense_shapes() -> dict[str, bytes]:
    def fill(unit: bytes) -> bytes:
        return unit * (DENSE_BYTES // len(unit))

    chain = fill(b"WARC/1.0\r\nContent-Length: 1\r\n\r\nx\r\n\r\n")
    return {
        "bare-lines": b"junk" + fill(b"WARC/1.0\r\n"),
        "value-ends": b"junk" + fill(b"a: http://x/WARC/1.0\r\n"),
        "value-ends-unique": b"junk" + b"".join(b"f%d: http://x/WARC/1.0\r\n" % i for i in range(DENSE_BYTES // 28)),
        "headers-joined": b"WARC/1.0\r\n" + fill(b"a: WARC/1.0\r\n") + b"\r\n\r\n",
        "no-header-end": b"junk" + fill(b"x" * 1000 + b"WARC/1.0\r\n"),
        "empty-then-junk": fill(b"WARC/1.0\r\nContent-Length: 0\r\n\r\nX"),
        "chain-in-body": b"WARC/1.0\r\nContent-Length: %d\r\n\r\n" % len(chain) + chain + b"JUNK",
        "damaged-headers": fill(b"WARC/1.0\r\nContent-Length: 0\r\n\r\nContent-Length: 1000000\r\n\r\n"),
        "nul-runs": fill(b"WARC/1.0\r\nContent-Length: 3\r\n\r\nabc" + b"\0" * 4000 + b"x"),
    }


def dense_version_lines(root: Path) -> Target:
    """Hostile bytes dense with version lines: each byte framed a bounded number of times, few errors."""
    from bodyblocks.batch.warc import iter_warc

    root.mkdir(parents=True)
    found = []
    for name, data in _dense_shapes().items():
        for suffix, content in ((".warc", data), (".warc.gz", gzip.compress(data, 6))):
            path = root / f"{name}{suffix}"
            path.write_bytes(content)
            start = time.process_time()
            items = list(iter_warc(path))
            seconds = time.process_time() - start
            path.unlink()
            good = len(items) <= 2 and not any(i.body for i in items) and seconds <= DENSE_LIMIT_S
            found.append((good, f"{path.name} {seconds:.2f} s {len(items)} items"))
    met = all(good for good, _ in found)
    return (f"WARC: {DENSE_BYTES >> 20} MiB dense with WARC/1.0 lines, bounded CPU", met,
            "; ".join(detail for _, detail in found) + f" (at most {DENSE_LIMIT_S:g} s CPU and 2 items each)")


class _Site(BaseHTTPRequestHandler):
    """Good pages, and /spin: a script that never returns."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        name = self.path.strip("/")
        if name == "spin":
            html = b"<html><body><p>spinning</p><script>while (true) {}</script></body></html>"
        elif not name.isdigit():  # favicon.ico
            self.send_error(404)
            return
        else:
            html = _page(int(name))
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(html)))
        self.end_headers()
        self.wfile.write(html)

    def log_message(self, *args: object) -> None:
        pass


def spinning_page(root: Path) -> Target:
    """One spinning page in a URL list: the pages after it get their own chance."""
    label = "URL list: a page spinning in while(true){}"
    from bodyblocks.capture import CaptureUnavailable, check_available

    try:
        check_available()
    except CaptureUnavailable as exc:
        return label, True, f"skipped: no browser here ({exc})"
    root.mkdir(parents=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        urls = [f"{base}/0", f"{base}/spin", *(f"{base}/{i}" for i in range(1, 5))]
        (root / "urls.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
        report, seconds, err = _extract([root / "urls.txt"], root / "out", "--capture-timeout", "3",
                                        timeout=SPIN_LIMIT_S * 2)
    finally:
        server.shutdown()
        server.server_close()
    pages = report.get("pages", [])
    ok = sum(p.get("status") == "ok" for p in pages)
    spin = [(p.get("error") or "").split(":", 1)[0] for p in pages if (p.get("input") or "").endswith("/spin")]
    met = ok == 5 and spin == ["capture-timeout"] and seconds <= SPIN_LIMIT_S and "Traceback" not in err
    return label, met, (f"{ok}/5 other pages ok, the spinning one {spin[0] if spin else 'missing'}, {seconds:.1f} s "
                        f"(limit {SPIN_LIMIT_S:g} s)" + (", traceback in stderr" if "Traceback" in err else ""))
