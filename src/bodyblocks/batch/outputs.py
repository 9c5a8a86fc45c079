"""Stages 3-4 of run_batch: each page's output file and report line as it is done, then report.json.

    report = Report(out, fmt="txt", extractor="ensemble")
    report.write(job, extraction, None, seconds)      # DIR/<key>.txt + a line of the journal (journal.py)
    report.close()
    report.write_report(seconds)                      # DIR/report.json: totals and every page of DIR

Every file is written atomically (files.atomic_path); report.json is streamed from the journal, so memory
stays flat however many pages there are, and it covers every page the folder's runs have done. The columnar
formats (parquet, jsonl) write a row per page into shards (columnar.py: `page_row`) in place of a file per page.
Nothing is written through a link in DIR (files.refuse_links): a page whose folder is one fails, a review folder
that is one refuses the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from bodyblocks.batch.columnar import COLUMNAR, SHARD_SIZE, ShardWriter
from bodyblocks.batch.input_identity import same_input, stamped, unchanged
from bodyblocks.batch.inputs import Job, printable
from bodyblocks.batch.journal import Journal, OutputUnwritable
from bodyblocks.batch.review import PAGES, REVIEW, review_path, write_review, write_review_index
from bodyblocks.page.markdown import block_kind, folded, front_matter, text_markdown, to_markdown
from bodyblocks.page.metadata import FIELDS, resolve_canonical
from bodyblocks.runtime.files import atomic_path, refuse_links, write_atomic
from bodyblocks.types import Extraction

FORMATS = {"txt": ".txt", "json": ".json", "md": ".md", **COLUMNAR}


@dataclass
class Totals:
    """Counts for the run report."""

    pages: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    low_confidence: int = 0
    empty: int = 0
    truncated: int = 0  # pages cut at the segmenter's size limit, or by the crawler (WARC-Truncated)
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)  # WARC records that are no page, by kind (this run's)


def render(ex: Extraction, fmt: str, key: str) -> str:
    """The output file's content in txt, json or md (md: the page's metadata as YAML front matter first).

    txt: the headline on the first line and a blank line (when the page has a title that the text does not already
    open with: an extractor that keeps it in its text), then the body text, a paragraph a line; a page without body
    text gives an empty file."""
    if fmt == "txt":
        if not ex.text:
            return ""
        title = " ".join(ex.title.split())
        first = ex.text.lstrip().split("\n", 1)[0]
        return (f"{title}\n\n" if title and folded(first) != folded(title) else "") + ex.text + "\n"
    if fmt == "md":
        return front_matter({**metadata_of(ex), "page_kind": ex.page_kind, "captions": ex.captions,
                             "comments": ex.comments}) + _markdown(ex)
    rec: dict[str, Any] = {
        "id": key, "title": ex.title, **metadata_of(ex), "standfirst": ex.standfirst or None, "text": ex.text,
        "page_kind": ex.page_kind,
        "byline": ex.byline or None, "captions": ex.captions, "comments": ex.comments,
        "extractor": ex.extractor, "encoding": ex.encoding,
        "confidence": ex.confidence, "low_confidence": ex.low_confidence,
        "low_confidence_reason": ex.low_confidence_reason or None, "no_body": ex.no_body,
        "error_page": ex.error_page, "error_text": ex.error_text or None, "hidden_source": ex.hidden_source,
    }
    if ex.blocks is not None:
        probs = ex.probabilities or [None] * len(ex.blocks)
        kept = set(ex.kept or [])
        rec["blocks"] = [
            {"text": b.text, "kind": block_kind(b), "tag_path": b.tag_path, "p_body": p, "kept": b.index in kept}
            for b, p in zip(ex.blocks, probs, strict=True)
        ]
    return json.dumps(rec, ensure_ascii=False, indent=1) + "\n"


def _markdown(ex: Extraction) -> str:
    """The page as Markdown: a block extractor's kept blocks with their structure, else its text's lines."""
    if ex.blocks is not None and ex.kept is not None:  # a block extractor: the blocks' structure
        return to_markdown(ex.title, [ex.blocks[i] for i in sorted(ex.kept)], ex.canonical_url, ex.standfirst)
    return text_markdown(ex.title, ex.text, ex.standfirst)


def metadata_of(ex: Extraction | None) -> dict[str, str | None]:
    """The page's metadata fields (metadata.FIELDS: author, date, site_name, language, canonical_url)."""
    return {f: getattr(ex, f, None) if ex is not None else None for f in FIELDS}


def page_row(job: Job, ex: Extraction | None, error: str | None) -> dict[str, Any]:
    """One page's row of a columnar shard (columnar.COLUMNS); a failed page has its error and no text."""
    flags = [] if ex is None else [name for name, on in (
        ("low_confidence", ex.low_confidence), ("no_body", ex.no_body), ("truncated", ex.truncated),
        ("replaced", ex.replaced), ("guessed", ex.guessed), ("error_page", ex.error_page),
        ("hidden_source", ex.hidden_source)) if on]
    return {
        "id": job.key, "url": job.url and printable(job.url), "record_id": job.record_id,
        "title": ex.title if ex else None, "standfirst": (ex.standfirst or None) if ex else None,
        "text": ex.text if ex else None, "captions": ex.captions if ex else None,
        "comments": ex.comments if ex else None,
        "markdown": render(ex, "md", job.key) if ex else None, **metadata_of(ex),
        "language": job.language or (ex.language if ex else None), "page_kind": ex.page_kind if ex else None,
        "encoding": ex.encoding if ex else None, "confidence": ex.confidence if ex else None, "flags": flags,
        "error": error and printable(error),
    }


def outcome(ex: Extraction) -> dict[str, Any]:
    """The fields of a done page's report line that come from its extraction (`entry`)."""
    kept = len(ex.kept) if ex.kept is not None else None
    dropped = len(ex.blocks) - kept if ex.blocks is not None and kept is not None else None
    return {
        "status": "ok", "error": None, "encoding": ex.encoding, "chars": len(ex.text), "title": ex.title,
        "blocks_kept": kept, "blocks_dropped": dropped, "confidence": ex.confidence,
        "low_confidence": ex.low_confidence, "low_confidence_reason": ex.low_confidence_reason or None,
        "no_body": ex.no_body, "replaced": ex.replaced,
        "truncated": ex.truncated, "guessed": ex.guessed, "error_page": ex.error_page,
        "hidden_source": ex.hidden_source,
    }


def entry(job: Job, fields: dict[str, Any] | None, error: str | None, seconds: float, out: str | None
          ) -> dict[str, Any]:
    """One page's line of the run report, from a done page's `outcome` fields (None: a failed page, with its
    error)."""
    source = job.path or job.url
    rec: dict[str, Any] = {"id": job.key, "input": printable(source) if source else None, **stamped(job),
                           "output": out, "seconds": round(seconds, 4)}
    if job.record_id is not None:  # a WARC record's page
        rec |= {"url": job.url and printable(job.url), "record_id": job.record_id}
    if fields is None:
        return rec | {"status": "failed", "error": error}
    return rec | fields


@dataclass
class Rendered:
    """A done page as Report.write takes it from where it was extracted (a worker process): its output (the
    file's content; a columnar format's row), its report line's `outcome` fields, and its Extraction only when
    the run makes review pages. The batch runner's workers send this back in place of the Extraction, whose
    blocks cost more to pickle, send and unpickle than all the rest of what comes back (0.9 of 1.0 ms a page)."""

    output: str | dict[str, Any]
    fields: dict[str, Any]
    ex: Extraction | None = None


@dataclass(frozen=True)
class Renderer:
    """Extraction -> Rendered for a run's format and review share (Report.renderer); what Report.write makes of
    an Extraction it is given, so both give the same files and lines."""

    fmt: str
    review: float = 0.0

    def __call__(self, job: Job, ex: Extraction) -> Rendered:
        resolve_canonical(ex, job.url)
        output = page_row(job, ex, None) if self.fmt in COLUMNAR else render(ex, self.fmt, job.key)
        return Rendered(output, outcome(ex), ex if self.review else None)


def sampled(key: str, share: float) -> bool:
    """A deterministic sample: the same pages are reviewed on every run."""
    h = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16)
    return h < share * 0xFFFFFFFF


class Report:
    """The outputs of one run as they are written: a file per page, a journal line per page (journal.py), the
    run's totals; report.json over every page of the folder at the end."""

    def __init__(self, out: Path, fmt: str, extractor: str, review: float = 0.0, progress: bool = False,
                 settings: dict[str, Any] | None = None, resume: bool = True, total: int | None = None,
                 shard_size: int = SHARD_SIZE, model: dict[str, Any] | None = None) -> None:
        """`settings`: what the outputs depend on besides the extractor's name and the format (its checkpoint,
        its decision rule, ...), recorded in the journal; a resumed run must have the same. Raises
        journal.FolderBusy and journal.SettingsMismatch. `total`: the pages expected (the progress bar's ETA).
        `shard_size`: pages per shard of a columnar format. `model`: what made the outputs (report.json's "model":
        loading/plan.Plan.describe)."""
        self.out, self.fmt, self.extractor, self.review = out, fmt, extractor, review
        self.model = model
        self.suffix = FORMATS[fmt]
        if review:  # review pages would land wherever a linked review folder leads: the run is refused
            refuse_links(out, out / REVIEW / PAGES / "-")
        self.totals = Totals()  # this run's
        # a columnar format's shard being written and its pages' counts: an interrupted run drops that shard
        # (close), and its pages are then neither done nor in this run's totals
        self._open_shard: tuple[str, Totals] | None = None
        self.shards = ShardWriter(out, fmt, shard_size) if fmt in COLUMNAR else None
        settings = {"extractor": extractor, "format": fmt, **(settings or {})}
        if self.shards is not None:
            settings["shard_size"] = shard_size  # other shard sizes would cut other shards
        self.journal = Journal(out, settings, resume).__enter__()
        if self.shards is not None:
            try:
                self.shards.start(self.journal.shards, replace=not resume)
            except OSError as exc:
                self.journal.close()
                raise OutputUnwritable(f"cannot prepare the shards in {out}: {exc.strerror or exc}") from exc
        self.renderer = Renderer(fmt, review)  # what write makes of an Extraction; a worker may do it instead
        self.bar = progress_bar(total) if progress else None

    def target(self, job: Job) -> Path:
        """The page's output file (a columnar format's: the shard its latest line names, if any)."""
        if self.shards is not None:
            line = self.journal.line(job.key) or {}
            output = line.get("output")
            return self.out / os.path.basename(output) if isinstance(output, str) else self.out / "-"
        return self.target_for(job.key)

    def is_done(self, job: Job) -> bool:
        """Whether the page's output exists from an earlier run and, for a page read from a file, was made from
        this page's input (same_input): keys follow the inputs' order, so a page put before another of the same
        id (a record inserted earlier in pages.jsonl, x.htm beside x.html) may take that one's key, and the
        output there is the other page's, to be redone. A columnar format's page is done when its latest line
        says it was written (ok or failed) into a shard that exists: shards are complete files, and a page
        that no earlier run wrote (one added to the input since) is in none."""
        if self.shards is not None:
            line = self.journal.line(job.key)
            return (line is not None and line.get("status") in ("ok", "failed") and self.target(job).is_file()
                    and same_input(line, job) and unchanged(line, job))
        try:
            if not self.target(job).exists():
                return False
        except OSError:  # a name the file system refuses: not done (writing it fails the page, with the reason)
            return False
        if job.path is None:
            return True
        line = self.journal.line(job.key)
        return line is None or (same_input(line, job) and unchanged(line, job))

    def filtered(self, job: Job) -> None:
        """A WARC record that is no page (a request, an image): counted by kind, nothing written."""
        kind = job.filtered or "filtered"
        self.totals.filtered[kind] = self.totals.filtered.get(kind, 0) + 1

    def target_for(self, key: str) -> Path:
        """The output file of the page with this key."""
        return self.out / (key + self.suffix)

    def skipped(self, job: Job) -> None:
        """A page whose output exists from an earlier run (resume); recorded when no earlier line is."""
        self.totals.pages += 1
        self.totals.skipped += 1
        if self.bar is not None:
            self.bar.update(1)
        if not self.journal.has(job.key):
            source = job.path or job.url
            self.journal.append({"id": job.key, "input": printable(source) if source else None, **stamped(job),
                                 "status": "skipped",
                                 "output": str(self.target(job)),
                                 **({"record_id": job.record_id} if job.record_id is not None else {})})

    def write(self, job: Job, ex: Extraction | Rendered | None, error: str | None, secs: float) -> None:
        """Write one page's output and journal line, and count it; `ex`: its extraction, or that extraction
        rendered already by this report's `renderer` (in a worker process), or None for a failed page."""
        page = self.renderer(job, ex) if isinstance(ex, Extraction) else ex
        target, review_error = None, ""
        if self.shards is not None:
            target = self._add_row(job, page_row(job, None, error) if page is None else page.output)
        elif page is not None:
            target = self.target(job)
            try:
                if "/" in job.key:  # its folders in DIR: none may be a link
                    refuse_links(self.out, target)
                write_atomic(target, page.output)
            except OSError as exc:
                page, error, target = None, f"write-failed: {exc}", None
        if page is not None and self.review and (page.fields["low_confidence"] or page.fields["no_body"]
                                                 or sampled(job.key, self.review)):
            assert page.ex is not None, "a run with review pages renders with its Extraction kept"
            try:
                where = review_path(self.out / REVIEW, job.key)
                refuse_links(self.out, where)
                write_review(where, job.key, page.ex)
            except OSError as exc:  # the page's own output is written: its line says the review page is not
                review_error = f"review-failed: {exc.strerror or exc}"
        line = entry(job, None if page is None else page.fields, error and printable(error), secs,
                     str(target) if target else None)
        if review_error:
            line["review_error"] = printable(review_error)
        count(self.totals, line)
        if self.shards is not None and target is not None:
            if self._open_shard is None or self._open_shard[0] != target.name:
                self._open_shard = (target.name, Totals())
            count(self._open_shard[1], line)
        self.journal.append(line)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(failed=self.totals.failed, refresh=False)

    def _add_row(self, job: Job, row: dict[str, Any]) -> Path:
        """The page's row into its shard (a failed page too: its row holds the error); returns the shard's file."""
        assert self.shards is not None
        try:
            shard = self.shards.add(job.source, self.shards.place(job.source), row)
        except OSError as exc:
            raise OutputUnwritable(f"cannot write a shard in {self.out}: {exc.strerror or exc}") from exc
        return self.shards.path(shard)

    def flush(self) -> None:
        """The journal lines written so far, on disk."""
        self.journal.sync()

    def close(self, complete: bool = True) -> None:
        """Finish the last shard (complete: the run went through its inputs; else it is dropped, to be redone),
        close the journal (releasing the folder's lock) and the progress bar."""
        try:
            if self.shards is not None:
                dropped = not complete and self._open_shard is not None and self.shards.current is not None
                self.shards.close(complete)
                if dropped and self._open_shard is not None:  # its pages are done again when the run is resumed
                    _take(self.totals, self._open_shard[1])
                    self._open_shard = None
        except OSError as exc:
            raise OutputUnwritable(f"cannot write a shard in {self.out}: {exc.strerror or exc}") from exc
        finally:
            self.journal.close()
        if self.bar is not None:
            self.bar.close()

    def write_report(self, seconds: float, status: str = "complete") -> Totals:
        """report.json: the totals over every page of the folder and this run's, then every page's latest line,
        streamed from the journal (memory stays flat); `status`: complete or interrupted. Returns this run's."""
        run = self.totals
        run.seconds = seconds
        folder = Totals()
        for line in self._listed():
            count(folder, line)
        # the folder's seconds: this run's and those of the runs before it (their report.json's, when resumed)
        folder.seconds = round(seconds + (_earlier_seconds(self.out) if self.journal.resume else 0.0), 3)
        head = {
            "extractor": self.extractor, "model": self.model, "format": self.fmt, "status": status,
            "totals": asdict(folder),
            "this_run": asdict(run), "pages_per_s": round(run.pages / run.seconds, 3) if run.seconds else None,
        }
        with atomic_path(self.out / "report.json") as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "pages": [\n')
            for i, line in enumerate(self._listed()):
                fh.write(("," if i else "") + json.dumps(line, ensure_ascii=False) + "\n")
            fh.write("]}\n")
        if self.review:
            confidence = {line["id"]: (not line.get("low_confidence"), line.get("confidence") or 0.0)
                          for line in self._listed() if line.get("status") == "ok"}
            try:
                write_review_index(self.out / REVIEW, confidence)
            except OSError as exc:  # report.json is written: the message names the file that is not, and why
                where = self.out / REVIEW / "index.html"  # not the temporary written beside it
                raise OutputUnwritable(f"cannot write {where}: {exc.strerror or exc}") from exc
        return run


    def _listed(self) -> Iterator[dict[str, Any]]:
        """Every page's latest line but those of a columnar format's pages whose shard is not there (dropped by an
        interrupted run, or removed since): those pages are not done, and a resumed run does them again."""
        if self.shards is None:
            yield from self.journal.lines()
            return
        there = {name for name in os.listdir(self.out) if name.endswith(self.suffix)}
        for line in self.journal.lines():
            output = line.get("output")
            if not isinstance(output, str) or os.path.basename(output) in there:
                yield line


def _take(totals: Totals, part: Totals) -> None:
    """Take the counts of `part` out of `totals`."""
    for name in (f.name for f in fields(Totals)):
        have, less = getattr(totals, name), getattr(part, name)
        if isinstance(have, dict):
            for key, n in less.items():
                have[key] = have.get(key, 0) - n
                if not have[key]:
                    del have[key]
        else:
            setattr(totals, name, have - less)


def _earlier_seconds(out: Path) -> float:
    """totals.seconds of the folder's report.json from the runs before this one (0 when there is none)."""
    try:
        with open(out / "report.json", encoding="utf-8") as fh:
            start = fh.read(65536)  # totals come first: the page lines that follow may be many
        head = json.loads(start[: start.index(', "pages": [')] + "}")
        return float(head["totals"]["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def count(totals: Totals, line: dict[str, Any]) -> None:
    """Count one page's report line into `totals`."""
    totals.pages += 1
    if line["status"] == "skipped":
        totals.skipped += 1
    elif line["status"] == "failed":
        totals.failed += 1
        reason = (line.get("error") or "error").split(":", 1)[0]
        totals.reasons[reason] = totals.reasons.get(reason, 0) + 1
    else:
        totals.ok += 1
        totals.low_confidence += bool(line.get("low_confidence"))
        totals.empty += not line.get("chars")
        totals.truncated += bool(line.get("truncated"))


def progress_bar(total: int | None = None) -> Any:
    """A tqdm bar on stderr: pages done of `total`, the rate and the time left."""
    from tqdm import tqdm

    return tqdm(total=total, unit="page", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
