"""URL lists: reading them from a file or standard input, and the schemes a browser is asked to load.

A URL with another scheme (ftp:, javascript:, a bare path) is rejected before any browser starts, so a bad
line in a list costs nothing and shows up as a failed page rather than a browser error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

SCHEMES = ("http", "https", "file")


def read_urls(source: str | Path) -> list[str]:
    """URLs from a file with one per line ('-' reads standard input); blank lines and '#' comments skipped."""
    text = sys.stdin.read() if str(source) == "-" else Path(source).read_text(encoding="utf-8")
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _rejection(url: str) -> str | None:
    """Why the URL is not loaded at all, or None when its scheme is one of SCHEMES."""
    if urlsplit(url).scheme.lower() not in SCHEMES:
        return f"not an {'/'.join(SCHEMES)} URL"
    return None
