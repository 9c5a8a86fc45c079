"""Output keys unique in a run, and over the runs into one output folder.

    name = FolderKeys(journal.line, same_input)     # or UniqueKeys() for a run on its own
    key = name("index", job)                        # "index", or "index~2" when "index" is another input's

A run hands out each key once (UniqueKeys: `~2`, `~3` on a collision). Into a folder that holds earlier runs'
pages, a key is also never taken from a page of another input (FolderKeys): `extract day1 --out out` then
`extract day2 --out out`, both with an `index.html`, keeps day1's `index` and names day2's `index~2`; a page
rerun takes back the key its input had (resume finds its output there).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

# a run's candidate keys per page, tried in turn: past these, the first key this run has not handed out
MAX_TRIES = 64


def url_key(url: str) -> str | None:
    """The output key of a page from a URL list, before safe_key: "example.com/news/story" for
    https://www.example.com/news/story.html?x=1 ... : the host (its port after a "_", "www." left out), the
    path's segments, the last one's page suffix dropped, "index" for a path that ends in "/", and a query's
    hash after a "_" (pages that differ only in their query stay apart); None for a line that is no http(s) URL."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    host = host.removeprefix("www.") + (f"_{port}" if port else "")
    segments = [s for s in parts.path.split("/") if s]
    if not segments or parts.path.endswith("/"):
        segments.append("index")
    last = segments[-1]
    for suffix in (".html", ".htm", ".php", ".aspx", ".asp", ".jsp", ".shtml"):
        if last.lower().endswith(suffix) and len(last) > len(suffix):
            segments[-1] = last[: -len(suffix)]
            break
    if parts.query:
        segments[-1] += "_" + hashlib.sha1(parts.query.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return "/".join([host, *segments])


class UniqueKeys:
    """Hands out each key once: a key seen before (ignoring case, for file systems that do) gets ~2, ~3, ..."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()  # 8-byte digests: memory stays small over millions of pages

    def _digest(self, key: str) -> bytes:
        return hashlib.blake2b(key.casefold().encode("utf-8"), digest_size=8).digest()

    def __call__(self, key: str, job: Any = None) -> str:
        """`key` made unique in the run; `job`: the page it names (FolderKeys uses it; here it is no matter)."""
        candidate, n = key, 1
        while self._digest(candidate) in self.seen:
            n += 1
            candidate = f"{key}~{n}"
        self.seen.add(self._digest(candidate))
        return candidate


class FolderKeys(UniqueKeys):
    """UniqueKeys that keep the output folder's earlier pages: a key whose latest journal line is another input's
    is that page's, not handed out again; a page whose input has a line under one of its candidate keys (`key`,
    `key~2`, ...) takes that key back. `line(key)`: the folder's latest line for a key, or None; `same(line, job)`:
    whether a line was made from the job's input (outputs.same_input)."""

    def __init__(self, line: Callable[[str], dict[str, Any] | None], same: Callable[[dict[str, Any], Any], bool]
                 ) -> None:
        super().__init__()
        self.line, self.same = line, same

    def __call__(self, key: str, job: Any = None) -> str:
        if job is None:
            return super().__call__(key)
        free = None  # the first candidate that no page of the folder or this run holds
        for n in range(1, MAX_TRIES + 1):
            candidate = key if n == 1 else f"{key}~{n}"
            if self._digest(candidate) in self.seen:
                continue
            line = self.line(candidate)
            if line is None:
                free = candidate
                break
            if self.same(line, job):  # this page's own key from an earlier run
                free = candidate
                break
        if free is None:
            return super().__call__(key)
        self.seen.add(self._digest(free))
        return free
