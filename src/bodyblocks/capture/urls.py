"""URL lists: reading them from a file or standard input, and the schemes a browser is asked to load.

A URL list is for web pages: http and https. A URL with another scheme (file:, which would read this machine's
files, ftp:, javascript:, a bare path), without a host, or whose line is not valid UTF-8 is rejected before any
browser starts, so a bad line in a list costs nothing and shows up as a failed page rather than a browser error
(or a local file captured as a page).
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

SCHEMES = ("http", "https")


def read_urls(source: str | Path) -> list[str]:
    """URLs from a file with one per line ('-' reads standard input); blank lines and '#' comments skipped. A line
    that is not valid UTF-8 is kept with U+FFFD in place of its bad bytes (the capture rejects it: _rejection)."""
    if str(source) == "-":
        stream = getattr(sys.stdin, "buffer", None)  # None: a text stream put in its place
        data = stream.read() if stream is not None else sys.stdin.read()
    else:
        data = Path(source).read_bytes()
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _rejection(url: str) -> str | None:
    """Why the URL is not loaded at all (one line), or None when it is an http(s) URL with a host."""
    if "\ufffd" in url:
        return "the line is not valid UTF-8"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        return f"not a URL ({exc})"
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        return f"not an {' or '.join(SCHEMES)} URL ({f'{scheme}:' if scheme else 'no scheme'})"
    if not host:
        return "no host in the URL"
    return None
