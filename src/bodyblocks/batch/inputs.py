"""The pages a batch run is asked for (stage 1 of run_batch): files, folders, dataset folders, URL lists.

    for job in iter_jobs(["pages/", "one.html", "dataset/", "urls.txt"]): ...

Each page becomes a Job whose key names its output (relative to the output folder, without suffix). Jobs
come lazily and in a stable order; a page that cannot even be found or captured is a Job with its error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

HTML_SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")


@dataclass
class Job:
    """One page to extract: where it comes from and the name of its output."""

    key: str  # output path relative to DIR, without suffix ("sub/page", a dataset id, a URL index)
    path: str | None = None  # page file
    html: str | None = None  # already in memory (captured pages)
    url: str | None = None
    error: str | None = None  # failed before extraction (e.g. capture)


def stem_of(path: Path) -> str:
    """File name without .html / .htm / .html.gz."""
    name = path.name
    for suffix in HTML_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _is_url_list(path: Path) -> bool:
    """A .txt/.urls/.lst file whose non-comment lines are all URLs."""
    if path.suffix.lower() not in (".txt", ".urls", ".lst"):
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [ln.strip() for ln in islice(fh, 50) if ln.strip() and not ln.startswith("#")]
    return bool(lines) and all(ln.split(":", 1)[0] in ("http", "https", "file") for ln in lines)


def iter_jobs(inputs: Iterable[str | Path], capture_opts: dict[str, Any] | None = None) -> Iterator[Job]:
    """Every page named by INPUT arguments, lazily, in a stable order."""
    for raw in inputs:
        path = Path(raw)
        if path.is_dir() and (path / "pages.jsonl").exists():
            yield from _dataset_jobs(path)
        elif path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(HTML_SUFFIXES))
            for f in files:
                rel = f.relative_to(path)
                yield Job(key=str(rel.parent / stem_of(f)) if rel.parent != Path(".") else stem_of(f), path=str(f))
        elif path.is_file() and _is_url_list(path):
            yield from _url_jobs(path, capture_opts or {})
        elif path.is_file():
            yield Job(key=stem_of(path), path=str(path))
        else:
            yield Job(key=stem_of(path), path=str(path), error="not-found: no such file or folder")


def _dataset_jobs(folder: Path) -> Iterator[Job]:
    """Pages of a folder in the shared dataset layout, named by their ids."""
    with open(folder / "pages.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield Job(key=str(rec["id"]), path=str(folder / rec["html"]), url=rec.get("url"))


def _url_jobs(path: Path, capture_opts: dict[str, Any]) -> Iterator[Job]:
    """Render URLs in headless Chromium (bodyblocks.capture); a failed capture is a failed page."""
    from bodyblocks.capture import capture, read_urls  # Selenium: imported only for URL lists

    for page in capture(read_urls(path), **capture_opts):
        if page.ok:
            yield Job(key=f"{page.index:06d}", html=page.html, url=page.final_url or page.url)
        else:
            yield Job(key=f"{page.index:06d}", url=page.url, error=f"capture-{page.status}: {page.error}")
