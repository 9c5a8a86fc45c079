"""`bodyblocks extract` on one page without --out: the page from a file, standard input (`-`) or a URL (`-u URL`
or a bare http(s) address: fetched over plain HTTP, or rendered in Chromium with --browser), its text to
standard output in the run's format, as the batch writes it (batch/worker.work and outputs.Renderer, so the
file a batch would write and what is printed are the same).

    curl -s https://example.com/story | bodyblocks extract - > story.txt
    bodyblocks extract -u https://example.com/story --format md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FETCH_CHUNK = 1 << 16


def is_address(text: str) -> bool:
    """Whether a command-line input is a web address rather than a path."""
    return text.split(":", 1)[0].lower() in ("http", "https") and "://" in text


def page_bytes(source: str, args: argparse.Namespace) -> tuple[bytes, str | None, str | None, str]:
    """The page's bytes, the charset its HTTP answer declared, its URL (after redirects) and its output key."""
    from bodyblocks.batch.inputs import stem_of
    from bodyblocks.batch.keys import url_key
    from bodyblocks.page.decode import MAX_INPUT_BYTES, maybe_gunzip, read_bytes

    if source == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"standard input: larger than {MAX_INPUT_BYTES} bytes")
        return maybe_gunzip(data), None, None, "stdin"
    if is_address(source):
        if args.browser:
            html, final = rendered(source, args.capture_timeout)
            return html.encode("utf-8"), "utf-8", final, url_key(final) or "page"
        data, charset, final = fetch(source, args.capture_timeout, MAX_INPUT_BYTES)
        return maybe_gunzip(data), charset, final, url_key(final) or "page"
    return read_bytes(source), None, None, stem_of(Path(source))


class _WebRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects to http(s) addresses only (urllib follows ftp: too)."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise urllib.error.URLError(f"redirected to {newurl}, not a web address")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(url: str, timeout: float, cap: int) -> tuple[bytes, str | None, str]:
    """GET `url` over plain HTTP(S): its body (at most `cap` bytes, within `timeout` seconds in all), its declared
    charset and its final URL. Raises OSError with one line saying why (HTTP status, no answer, too large)."""
    from bodyblocks.capture.urls import _rejection
    from bodyblocks.version import __version__

    bad = _rejection(url)
    if bad is not None:
        raise ValueError(f"{url}: {bad}")
    request = urllib.request.Request(url, headers={
        "User-Agent": f"bodyblocks/{__version__}", "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"})
    deadline = time.monotonic() + timeout
    try:
        with urllib.request.build_opener(_WebRedirects).open(request, timeout=timeout) as answer:
            declared = answer.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > cap:
                raise OSError(f"{url}: larger than {cap} bytes ({declared})")
            parts, size = [], 0
            while chunk := answer.read(FETCH_CHUNK):
                parts.append(chunk)
                size += len(chunk)
                if size > cap:
                    raise OSError(f"{url}: larger than {cap} bytes")
                if time.monotonic() > deadline:
                    raise OSError(f"{url}: not read within {timeout:g} s (--capture-timeout)")
            return b"".join(parts), answer.headers.get_content_charset(), answer.geturl()
    except urllib.error.HTTPError as exc:
        raise OSError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise OSError(f"{url}: {exc.reason}") from None
    except TimeoutError:
        raise OSError(f"{url}: no answer within {timeout:g} s (--capture-timeout)") from None


def rendered(url: str, timeout: float) -> tuple[str, str]:
    """The page rendered in headless Chromium (--browser) and its final URL."""
    from bodyblocks.capture import capture

    page = next(iter(capture([url], timeout=timeout, retries=0)))
    if page.status != "ok":
        raise OSError(f"{url}: {page.status}: {page.error}")
    return page.html, page.final_url or url


def run_one(args: argparse.Namespace, source: str, opts: Any) -> int:
    """Extract the one page `source` (a path, `-`, or a URL) with the batch's options `opts` and print it."""
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import Renderer
    from bodyblocks.batch.worker import init_worker, work
    from bodyblocks.errors import InputError

    extractor = opts.plan.build()  # a bad checkpoint, a missing extra: before the page is fetched
    try:
        data, charset, url, key = page_bytes(source, args)
    except (OSError, InputError) as exc:  # the page, not the command: exit status 1 as for a failed page
        print(f"bodyblocks extract: {exc}", file=sys.stderr)
        return 1
    init_worker(extractor, opts.page_timeout, None, Renderer(opts.fmt))
    _, page, error, _ = work(Job(key=key, html=data, url=url, charset=charset))
    if error is not None or page is None:
        print(f"bodyblocks extract: {'standard input' if source == '-' else source}: {error}", file=sys.stderr)
        return 1
    output: Any = page.output  # type: ignore[union-attr]
    if opts.fmt == "parquet":
        return _write_parquet(output)
    sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n" if opts.fmt == "jsonl" else output)
    sys.stdout.flush()
    if not page.fields.get("chars"):  # type: ignore[union-attr]
        print(f"bodyblocks extract: no body text found in {'standard input' if source == '-' else source}",
              file=sys.stderr)
    return 0


def _write_parquet(row: dict[str, Any]) -> int:
    """One row as a Parquet file on standard output."""
    from bodyblocks.batch.columnar import schema
    from bodyblocks.runtime.extras import require

    pa = require("pyarrow", "Parquet output")
    pq = require("pyarrow.parquet", "Parquet output")
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([row], schema=schema()), sink)
    sys.stdout.buffer.write(sink.getvalue().to_pybytes())
    sys.stdout.flush()
    return 0
