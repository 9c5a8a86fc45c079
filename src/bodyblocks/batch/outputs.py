"""Stages 3-4 of run_batch: each page's output file and report line as it is done, then report.json.

    report = Report(out, fmt="txt", extractor="ensemble")
    report.write(job, extraction, None, seconds)      # DIR/<key>.txt + a line of DIR/report.pages.jsonl
    report.close()
    report.write_report(seconds)                      # DIR/report.json: totals and every page

Every file is written atomically (files.atomic_path); report.json is streamed from the per-page lines,
so memory stays flat however many pages there are.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.batch.inputs import Job, printable
from bodyblocks.batch.review import write_review, write_review_index
from bodyblocks.files import atomic_path, write_atomic
from bodyblocks.types import Extraction

FORMATS = {"txt": ".txt", "json": ".json", "md": ".md"}


@dataclass
class Totals:
    """Counts for the run report."""

    pages: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    low_confidence: int = 0
    empty: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


def render(ex: Extraction, fmt: str, key: str) -> str:
    """The output file's content in txt, json or md."""
    if fmt == "txt":
        return ex.text + ("\n" if ex.text else "")
    if fmt == "md":
        head = f"# {ex.title}\n\n" if ex.title else ""
        return head + "\n\n".join(ex.text.splitlines()) + "\n"
    rec: dict[str, Any] = {
        "id": key, "title": ex.title, "text": ex.text, "extractor": ex.extractor, "encoding": ex.encoding,
        "confidence": ex.confidence, "low_confidence": ex.low_confidence, "no_body": ex.no_body,
    }
    if ex.blocks is not None:
        probs = ex.probabilities or [None] * len(ex.blocks)
        kept = set(ex.kept or [])
        rec["blocks"] = [
            {"text": b.text, "tag_path": b.tag_path, "p_body": p, "kept": b.index in kept}
            for b, p in zip(ex.blocks, probs, strict=True)
        ]
    return json.dumps(rec, ensure_ascii=False, indent=1) + "\n"


def entry(job: Job, ex: Extraction | None, error: str | None, seconds: float, out: str | None) -> dict[str, Any]:
    """One page's line of the run report."""
    source = job.path or job.url
    rec: dict[str, Any] = {"id": job.key, "input": printable(source) if source else None, "output": out,
                           "seconds": round(seconds, 4)}
    if ex is None:
        return rec | {"status": "failed", "error": error}
    kept = len(ex.kept) if ex.kept is not None else None
    dropped = len(ex.blocks) - kept if ex.blocks is not None and kept is not None else None
    return rec | {
        "status": "ok", "error": None, "encoding": ex.encoding, "chars": len(ex.text), "title": ex.title,
        "blocks_kept": kept, "blocks_dropped": dropped, "confidence": ex.confidence,
        "low_confidence": ex.low_confidence, "no_body": ex.no_body,
    }


def sampled(key: str, share: float) -> bool:
    """A deterministic sample: the same pages are reviewed on every run."""
    h = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16)
    return h < share * 0xFFFFFFFF


class Report:
    """The outputs of one run as they are written: a file per page, a report line per page, the totals."""

    def __init__(self, out: Path, fmt: str, extractor: str, review: float = 0.0, progress: bool = False) -> None:
        self.out, self.fmt, self.extractor, self.review = out, fmt, extractor, review
        self.suffix = FORMATS[fmt]
        self.totals = Totals()
        self.lines_path = out / "report.pages.jsonl"
        self.lines = open(self.lines_path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.bar = _progress() if progress else None

    def target(self, job: Job) -> Path:
        """The page's output file."""
        return self.out / (job.key + self.suffix)

    def skipped(self, job: Job) -> None:
        """A page whose output exists from an earlier run (resume)."""
        self.totals.pages += 1
        self.totals.skipped += 1
        self.lines.write(json.dumps({"id": job.key, "status": "skipped", "output": str(self.target(job))}) + "\n")

    def write(self, job: Job, ex: Extraction | None, error: str | None, secs: float) -> None:
        """Write one page's output and report line, and count it."""
        totals = self.totals
        totals.pages += 1
        target = None
        if ex is not None:
            target = self.target(job)
            try:
                write_atomic(target, render(ex, self.fmt, job.key))
            except OSError as exc:
                ex, error, target = None, f"write-failed: {exc}", None
        if ex is None:
            totals.failed += 1
            reason = (error or "error").split(":", 1)[0]
            totals.reasons[reason] = totals.reasons.get(reason, 0) + 1
        else:
            totals.ok += 1
            totals.low_confidence += ex.low_confidence
            totals.empty += not ex.text
            if self.review and sampled(job.key, self.review):
                write_review(self.out / "review" / (job.key + ".html"), job.key, ex)
        line = entry(job, ex, error and printable(error), secs, str(target) if target else None)
        self.lines.write(json.dumps(line, ensure_ascii=False) + "\n")
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(failed=totals.failed, refresh=False)

    def flush(self) -> None:
        """Push the report lines written so far to disk."""
        self.lines.flush()

    def close(self) -> None:
        """Close the per-page lines and the progress bar."""
        self.lines.close()
        if self.bar is not None:
            self.bar.close()

    def write_report(self, seconds: float) -> Totals:
        """report.json: totals and every page, streamed from the closed per-page lines (memory stays flat)."""
        totals = self.totals
        totals.seconds = seconds
        head = {
            "extractor": self.extractor, "format": self.fmt,
            "totals": {k: v for k, v in vars(totals).items()},
            "pages_per_s": round(totals.pages / totals.seconds, 3) if totals.seconds else None,
        }
        with atomic_path(self.out / "report.json") as tmp, open(tmp, "w", encoding="utf-8") as fh, \
                open(self.lines_path, encoding="utf-8") as src:
            fh.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "pages": [\n')
            for i, line in enumerate(src):
                fh.write(("," if i else "") + line)
            fh.write("]}\n")
        if self.review:
            write_review_index(self.out / "review")
        return totals


def _progress() -> Any:
    from tqdm import tqdm

    return tqdm(unit="page", file=sys.stderr, dynamic_ncols=True)
