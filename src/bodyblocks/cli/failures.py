"""What `bodyblocks extract` says at the end of a run besides its counts: which pages failed, by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SHOWN = 5  # failed pages named at the end of a run; report.json has them all
WIDTH = 200  # characters of a failure's message shown


def failed_pages(report: Path) -> tuple[list[str], int]:
    """The first SHOWN failed pages of a report.json (each "input: error") and how many failed in all. The page
    lines are read one at a time (report.json writes one a line after its head), so memory stays flat."""
    shown: list[str] = []
    failed = 0
    try:
        with open(report, encoding="utf-8") as fh:
            next(fh, None)  # the head: totals, model
            for line in fh:
                line = line.strip().lstrip(",")
                if not line.startswith("{") or '"failed"' not in line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("status") != "failed":
                    continue
                failed += 1
                if len(shown) < SHOWN:
                    name = rec.get("url") or rec.get("input") or rec.get("id")
                    error = " ".join(str(rec.get("error") or "error").split())
                    shown.append(f"{name}: {error if len(error) <= WIDTH else error[:WIDTH - 3] + '...'}")
    except OSError:
        return [], 0
    return shown, failed


def print_failed_pages(report: Path) -> None:
    """The failed pages' names, the first few, then how many more (report.json lists them all)."""
    shown, failed = failed_pages(report)
    for line in shown:
        print(f"  failed page {line}", file=sys.stderr)
    if failed > len(shown):
        print(f"  ... and {failed - len(shown)} more; see {report}", file=sys.stderr)
