"""The label store of `bodyblocks annotate`: a dataset's pages and the annotation files people make of them.

The file format (one JSON per page, keyed by the blocks' xpaths, with text fingerprints) is
training/annotations.py. The labels folder is `DATASET/annotations/` by default; then the gold text derived
from the labels (the body blocks' text, one block per line group) is written into the dataset too, where its
readers look for gold (`gold/<id>.txt` named by pages.jsonl, or `name.txt` beside `name.html`), unless the
page already had gold the tool did not write. With another labels folder the dataset is only read.

Every write is atomic (a temporary file renamed over the target). Page ids come from the dataset's own
listing: nothing named by a caller is used as a path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bodyblocks.files import write_atomic
from bodyblocks.training.annotations import (
    KINDS,
    Annotation,
    AnnotationError,
    apply_labels,
    block_keys,
    derived_gold,
    dump_annotation,
    fingerprint,
    now_utc,
    read_annotation,
)
from bodyblocks.training.datasets import ANNOTATIONS, PAGE_SUFFIXES, annotated_pages, page_from_record, read_records
from bodyblocks.types import Block, Page

__all__ = ["KINDS", "Annotation", "AnnotationError", "AnnotationStore", "annotated_pages", "apply_labels",
           "block_keys", "derived_gold", "fingerprint", "read_annotation"]


@dataclass
class _Entry:
    """A page of the dataset being annotated: its id and where its files are."""

    id: str
    record: dict[str, Any] | None  # the pages.jsonl record (shared layout), else None
    html_path: Path  # the page file
    gold_path: Path  # where its gold text is (or would be written), absolute


class AnnotationStore:
    """The pages of one dataset folder and their block labels (what `bodyblocks annotate` serves)."""

    def __init__(self, dataset: str | Path, labels: str | Path | None = None) -> None:
        """
        Args:
            dataset: a dataset folder: the shared layout (pages.jsonl) or a plain folder of name.html pages.
            labels: the folder of annotation files; None: DATASET/annotations, and then the derived gold
                text is written into the dataset as well.
        """
        self.dataset = Path(dataset).resolve()
        if not self.dataset.is_dir():
            raise AnnotationError(f"no dataset folder {dataset}")
        self.labels_dir = Path(labels).resolve() if labels is not None else self.dataset / ANNOTATIONS
        self.writes_gold = labels is None or self.labels_dir == self.dataset / ANNOTATIONS
        self.entries: dict[str, _Entry] = {e.id: e for e in self._list()}
        if not self.entries:
            raise AnnotationError(f"{self.dataset}: no pages (neither pages.jsonl nor name.html files)")

    # ------------------------------------------------------------------------------------------ pages
    def _list(self) -> Iterator[_Entry]:
        if (self.dataset / "pages.jsonl").is_file():
            for rec in read_records(self.dataset):
                gold = rec.get("gold") or f"gold/{rec['id']}.txt"
                yield _Entry(str(rec["id"]), rec, self.dataset / rec["html"], self.dataset / gold)
            return
        for path in sorted(self.dataset.iterdir()):
            suffix = next((s for s in PAGE_SUFFIXES if path.name.lower().endswith(s)), None)
            if suffix and path.is_file():
                name = path.name[: -len(suffix)]
                yield _Entry(name, None, path, self.dataset / f"{name}.txt")

    def ids(self) -> list[str]:
        """Page ids in the dataset's order."""
        return list(self.entries)

    def entry(self, page_id: str) -> _Entry:
        try:
            return self.entries[page_id]
        except KeyError:
            raise AnnotationError(f"no page {page_id!r} in {self.dataset.name}") from None

    def page(self, page_id: str) -> Page:
        """The page's bytes and metadata, as the dataset readers give them."""
        e = self.entry(page_id)
        if e.record is not None:
            page = page_from_record(self.dataset, e.record)
        else:
            page = Page(id=e.id, html=e.html_path.read_bytes(), dataset=self.dataset.name)
        if page.meta.get("error"):
            raise AnnotationError(f"page {page_id}: {page.meta['error']}")
        return page

    # ----------------------------------------------------------------------------------- annotations
    def path_of(self, page_id: str) -> Path:
        self.entry(page_id)
        return self.labels_dir / f"{page_id}.json"

    def load(self, page_id: str) -> Annotation | None:
        """The page's stored annotation, or None."""
        path = self.path_of(page_id)
        return read_annotation(path) if path.is_file() else None

    def status(self) -> list[dict[str, Any]]:
        """Per page: id, whether it has labels, whether it is done, its kind."""
        out = []
        for page_id in self.entries:
            ann = self.load(page_id)
            out.append({"id": page_id, "labelled": ann is not None, "done": bool(ann and ann.done),
                        "kind": ann.kind if ann else None})
        return out

    def next_page(self, after: str | None = None) -> str | None:
        """The first page not done (after `after` when given, wrapping round), or None when all are done."""
        ids = self.ids()
        start = ids.index(after) + 1 if after in self.entries else 0
        for page_id in ids[start:] + ids[:start]:
            ann = self.load(page_id)
            if ann is None or not ann.done:
                return page_id
        return None

    def save(self, page_id: str, blocks: Sequence[Block], labels: Sequence[int], *, done: bool = False,
             kind: str | None = None, note: str = "") -> Annotation:
        """Store a page's labels (one 0/1 per block of `blocks`, the page's blocks as segmented now).

        Writes `<labels>/<id>.json`, and in the dataset's own labels folder the derived gold text too.
        """
        if len(labels) != len(blocks):
            raise AnnotationError(f"page {page_id}: {len(labels)} labels for {len(blocks)} blocks")
        if any(y not in (0, 1) for y in labels):
            raise AnnotationError(f"page {page_id}: labels must be 0 or 1")
        if kind is not None and kind not in KINDS:
            raise AnnotationError(f"page {page_id}: kind must be one of {', '.join(KINDS)}")
        if len(note) > 2000:
            raise AnnotationError(f"page {page_id}: note longer than 2000 characters")
        old = self.load(page_id)
        keys = block_keys(blocks)
        ann = Annotation(
            id=page_id, labels=dict(zip(keys, (int(y) for y in labels), strict=True)),
            fingerprints={k: fingerprint(b.text) for k, b in zip(keys, blocks, strict=True)},
            kind=kind if kind is not None else (old.kind if old else None), done=done, note=note,
            updated=now_utc(), written_gold=old.written_gold if old else None,
        )
        if self.writes_gold:
            self._write_gold(ann, blocks, labels)
        self.labels_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.labels_dir / f"{page_id}.json", dump_annotation(ann.to_json(keys)))
        return ann

    def _write_gold(self, ann: Annotation, blocks: Sequence[Block], labels: Sequence[int]) -> None:
        """The derived gold text into the dataset, unless the page has gold this tool did not write."""
        e = self.entry(ann.id)
        rel = os.path.relpath(e.gold_path, self.dataset)
        has_own_gold = e.gold_path.is_file() and ann.written_gold != rel
        if e.record is not None and e.record.get("gold") and ann.written_gold != rel:
            has_own_gold = True
        if has_own_gold:
            return
        write_atomic(e.gold_path, derived_gold(blocks, labels) + "\n")
        ann.written_gold = rel
        if e.record is not None and e.record.get("gold") != rel:
            e.record["gold"] = rel
            self._write_records()

    def _write_records(self) -> None:
        """pages.jsonl with the records as they are now (a page that gained gold names its file)."""
        lines = [json.dumps(e.record, ensure_ascii=False) for e in self.entries.values() if e.record is not None]
        write_atomic(self.dataset / "pages.jsonl", "\n".join(lines) + "\n")
