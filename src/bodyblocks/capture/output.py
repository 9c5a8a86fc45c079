"""A capture written to a folder: OUT_DIR/<index>.html per page with HTML, and OUT_DIR/capture.jsonl.

capture.jsonl has one JSON line per input URL, in input order, written and flushed as each page arrives, so
an interrupted batch still describes every page it saved. A page with no HTML (nothing loaded) gets a line
with "file": null and no .html file.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.capture.fetch import CapturedPage
from bodyblocks.capture.workers import capture


@dataclass
class CaptureSummary:
    """What capture_to_dir wrote: counts per status and every failed page with its reason."""

    out_dir: Path
    total: int = 0
    ok: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (index, url, reason)
    elapsed: float = 0.0  # wall-clock seconds for the batch

    @property
    def pages_per_s(self) -> float:
        return self.total / self.elapsed if self.elapsed > 0 else 0.0


def capture_to_dir(urls: Iterable[str], out_dir: str | Path, progress: bool = False, **opts: Any) -> CaptureSummary:
    """Capture URLs into OUT_DIR/<index>.html (UTF-8) plus one JSON line per URL in OUT_DIR/capture.jsonl;
    `progress`: a bar on stderr (URLs done of all, rate, time left)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    urls = list(urls)
    summary, start = CaptureSummary(out_dir=out), time.monotonic()
    pages: Iterable[CapturedPage] = capture(urls, **opts)
    if progress:
        from tqdm import tqdm

        pages = tqdm(pages, total=len(urls), unit="url", file=sys.stderr, dynamic_ncols=True)
    with open(out / "capture.jsonl", "w", encoding="utf-8") as jsonl:
        for page in pages:
            jsonl.write(json.dumps(_record(page, _save(page, out)), ensure_ascii=False) + "\n")
            jsonl.flush()  # an interrupted batch keeps the lines of the pages it saved
            _count(summary, page)
    summary.elapsed = time.monotonic() - start
    return summary


def _save(page: CapturedPage, out: Path) -> str | None:
    """Write the page's HTML (when there is any) and return its file name."""
    if not page.html:
        return None
    name = f"{page.index}.html"
    (out / name).write_text(page.html, encoding="utf-8")
    return name


def _record(page: CapturedPage, file: str | None) -> dict[str, Any]:
    """The capture.jsonl line of one page."""
    keys = ("index", "url", "final_url", "status", "http_status", "attempts", "error")
    record = {k: getattr(page, k) for k in keys}
    return record | {"file": file, "elapsed": round(page.elapsed, 3)}


def _count(summary: CaptureSummary, page: CapturedPage) -> None:
    """Add one page to the summary."""
    summary.total += 1
    summary.by_status[page.status] = summary.by_status.get(page.status, 0) + 1
    if page.ok:
        summary.ok += 1
    else:
        summary.failed.append((page.index, page.url, f"{page.status}: {page.error}"))
