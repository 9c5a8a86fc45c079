"""The label store of `bodyblocks annotate`: a dataset's pages and the annotation files people make of them.

The file format (one JSON per page, keyed by the blocks' xpaths, with text fingerprints) is
training/annotations.py. The labels folder is `DATASET/annotations/` by default; then, for a page marked done,
the gold text derived from the labels (the body blocks' text, one block per line group) is written into the
dataset too, as a file of its own (and removed again when the page is no longer done): `gold/<id>.txt` in the
shared layout, which the page's annotation names (`written_gold`) and the dataset readers take as the page's
gold when its record names none, or `name.txt` beside `name.html`; never over gold the tool did not write.
The user's files are never rewritten: pages.jsonl stays byte for byte as it was, every record kept (those
left out here, duplicate ids). With another labels folder the dataset is only read.

Every write is atomic (a temporary file renamed over the target). Page ids come from the dataset's own
listing: nothing named by a caller is used as a path.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bodyblocks.runtime.files import write_atomic
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

KEEP: Any = object()  # save(kind=KEEP): the stored kind stays
_ID = re.compile(r"[\w][\w.\-]*")  # a page id usable as a file name (no separators, no leading dot)

__all__ = ["KEEP", "KINDS", "Annotation", "AnnotationError", "AnnotationStore", "annotated_pages", "apply_labels",
           "block_keys", "derived_gold", "fingerprint", "read_annotation"]


@dataclass
class _Entry:
    """A page of the dataset being annotated: its id and where its files are."""

    id: str
    record: dict[str, Any] | None  # the pages.jsonl record (shared layout), else None
    html_path: Path | None  # the page file (None: outside the dataset folder, so never used)
    gold_path: Path | None  # where its gold text is (or would be written), absolute


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
        if self.labels_dir.exists() and not self.labels_dir.is_dir():
            raise AnnotationError(f"--labels {labels}: not a folder")
        self._lock = threading.Lock()
        self.entries: dict[str, _Entry] = {e.id: e for e in self._list()}
        if not self.entries:
            raise AnnotationError(f"{self.dataset}: no pages (neither pages.jsonl nor name.html files)")

    # ------------------------------------------------------------------------------------------ pages
    def _list(self) -> Iterator[_Entry]:
        """The dataset's pages; one whose id is not a plain name, or whose files would lie outside the dataset
        folder (an absolute path, `..`, a symbolic link out of it), is left out with a warning."""
        if (self.dataset / "pages.jsonl").is_file():
            for rec in read_records(self.dataset):
                page_id = str(rec.get("id"))
                gold = rec.get("gold") or f"gold/{page_id}.txt"
                entry = _Entry(page_id, rec, self._inside(rec.get("html")), self._inside(gold))
                if self._usable(entry):
                    yield entry
            return
        for path in sorted(self.dataset.iterdir()):
            suffix = next((s for s in PAGE_SUFFIXES if path.name.lower().endswith(s)), None)
            if suffix and path.is_file():
                name = path.name[: -len(suffix)]
                entry = _Entry(name, None, self._inside(path.name), self._inside(f"{name}.txt"))
                if self._usable(entry):
                    yield entry

    def _inside(self, rel: Any) -> Path | None:
        """A path of the dataset's, resolved, when it stays inside the dataset folder."""
        if not isinstance(rel, str) or not rel:
            return None
        path = (self.dataset / rel).resolve()
        return path if path.is_relative_to(self.dataset) else None

    def _usable(self, entry: _Entry) -> bool:
        if _ID.fullmatch(entry.id) and entry.html_path is not None and entry.gold_path is not None:
            return True
        print(f"bodyblocks annotate: page {entry.id!r} left out: its id or its files' paths leave the dataset "
              "folder", file=sys.stderr)
        return False

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
            page = Page(id=e.id, html=e.html_path.read_bytes(), dataset=self.dataset.name)  # type: ignore[union-attr]
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
             kind: Any = KEEP, note: str = "") -> Annotation:
        """Store a page's labels (one 0/1 per block of `blocks`, the page's blocks as segmented now).

        Writes `<labels>/<id>.json`; in the dataset's own labels folder, a page marked done also gets the
        derived gold text (and loses the gold the tool wrote when it is no longer done). `kind`: one of KINDS,
        None to unset it, KEEP (default) to keep the stored one. Saves are serialised (the server's threads).
        """
        if len(labels) != len(blocks):
            raise AnnotationError(f"page {page_id}: {len(labels)} labels for {len(blocks)} blocks")
        if any(y not in (0, 1) for y in labels):
            raise AnnotationError(f"page {page_id}: labels must be 0 or 1")
        if kind is not KEEP and kind is not None and kind not in KINDS:
            raise AnnotationError(f"page {page_id}: kind must be one of {', '.join(KINDS)}")
        if len(note) > 2000:
            raise AnnotationError(f"page {page_id}: note longer than 2000 characters")
        with self._lock:
            old = self.load(page_id)
            keys = block_keys(blocks)
            ann = Annotation(
                id=page_id, labels=dict(zip(keys, (int(y) for y in labels), strict=True)),
                fingerprints={k: fingerprint(b.text) for k, b in zip(keys, blocks, strict=True)},
                kind=(old.kind if old else None) if kind is KEEP else kind, done=done, note=note,
                updated=now_utc(), written_gold=old.written_gold if old else None,
            )
            gold = self._gold_target(ann) if self.writes_gold else None
            if gold is not None and done:
                ann.written_gold = gold  # recorded first: a save cut short never leaves the tool's gold unowned
            self.labels_dir.mkdir(parents=True, exist_ok=True)
            target = self.labels_dir / f"{page_id}.json"
            write_atomic(target, dump_annotation(ann.to_json(keys)))
            if gold is not None:
                self._set_gold(ann, gold, derived_gold(blocks, labels) if done else None)
                if not done and ann.written_gold:  # the gold file is gone with the page's done mark
                    ann.written_gold = None
                    write_atomic(target, dump_annotation(ann.to_json(keys)))
            return ann

    def _gold_target(self, ann: Annotation) -> str | None:
        """The gold file (relative to the dataset) the tool may write for this page, or None when the page has
        gold that the tool did not write."""
        e = self.entry(ann.id)
        rel = os.path.relpath(e.gold_path, self.dataset)
        own = ann.written_gold == rel
        if not own and (e.gold_path.exists() or (e.record is not None and e.record.get("gold"))):
            return None
        return rel

    def _set_gold(self, ann: Annotation, rel: str, text: str | None) -> None:
        """Write the derived gold (text) or remove the tool's gold (None); pages.jsonl is not touched (the
        annotation names the file: module docstring)."""
        e = self.entry(ann.id)
        if text is not None:
            write_atomic(e.gold_path, text + "\n")
        else:
            e.gold_path.unlink(missing_ok=True)
