"""Block labels made by people: one JSON file per page, keyed by the blocks' xpaths.

A page's annotation, `<labels>/<id>.json`:

    {"format": 1, "id": "gne-163-1", "segmenter": "6", "kind": "news", "done": true, "note": "",
     "updated": "2026-12-01T17:02:11Z",
     "blocks": [{"key": "/html[1]/body[1]/div[2]/p[3]", "label": 1, "fp": "3f09a1c2d4"}, ...]}

`key` is the block's xpath; the second and later blocks of one element (text either side of a nested block)
get `#2`, `#3`, ... after it. `fp` fingerprints the block's text (SHA-1 of its characters without white
space, 10 hex digits), so a label file holds no page text and still notices when the segmenter's blocks
moved (`check`). The labels folder is `DATASET/annotations/` by default; then the gold text derived from
the labels (the body blocks' text, one block per line group) is written into the dataset too, where its
readers look for gold (`gold/<id>.txt` named by pages.jsonl, or `name.txt` beside `name.html`), unless the
page already had gold the tool did not write. With another labels folder the dataset is only read.

Every write is atomic (a temporary file renamed over the target). Page ids come from the dataset's own
listing: nothing named by a caller is used as a path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.files import write_atomic
from bodyblocks.segment import SEGMENTER_VERSION
from bodyblocks.training.datasets import PAGE_SUFFIXES, page_from_record, read_records
from bodyblocks.types import Block, Page

FORMAT = 1
LABELS_DIRNAME = "annotations"
KINDS = ("news", "government", "other")  # what a page is, as the annotator saw it (reports split by it)
_GOLD_MARK = "written_gold"  # an annotation's field naming the gold file the tool wrote (it may rewrite it)


class AnnotationError(ValueError):
    """A bad request to the store: an unknown page, labels that do not fit its blocks, a bad value."""


def block_keys(blocks: Sequence[Block]) -> list[str]:
    """Each block's key: its xpath, with `#2`, `#3`, ... on later blocks of the same element."""
    seen: dict[str, int] = {}
    keys = []
    for b in blocks:
        n = seen.get(b.xpath, 0) + 1
        seen[b.xpath] = n
        keys.append(b.xpath if n == 1 else f"{b.xpath}#{n}")
    return keys


def fingerprint(text: str) -> str:
    """10 hex digits of SHA-1 over the text without white space: notices a changed block, holds no text."""
    return hashlib.sha1("".join(text.split()).encode("utf-8")).hexdigest()[:10]


@dataclass
class Annotation:
    """One page's labels as stored."""

    id: str
    labels: dict[str, int]  # block key -> 1 body / 0 not body
    fingerprints: dict[str, str] = field(default_factory=dict)  # block key -> fingerprint when labelled
    kind: str | None = None
    done: bool = False
    note: str = ""
    segmenter: str = SEGMENTER_VERSION
    updated: str = ""
    written_gold: str | None = None  # the gold file this tool wrote, relative to the dataset

    def to_json(self, keys: Sequence[str]) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "format": FORMAT, "id": self.id, "segmenter": self.segmenter, "kind": self.kind, "done": self.done,
            "note": self.note, "updated": self.updated,
            "blocks": [{"key": k, "label": self.labels[k], "fp": self.fingerprints.get(k, "")} for k in keys],
        }
        if self.written_gold:
            rec[_GOLD_MARK] = self.written_gold
        return rec

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> Annotation:
        if rec.get("format") != FORMAT:
            raise AnnotationError(f"annotation {rec.get('id')!r}: unknown format {rec.get('format')!r}")
        blocks = rec.get("blocks") or []
        return cls(
            id=str(rec["id"]), labels={b["key"]: int(b["label"]) for b in blocks},
            fingerprints={b["key"]: b.get("fp", "") for b in blocks}, kind=rec.get("kind"),
            done=bool(rec.get("done")), note=str(rec.get("note") or ""),
            segmenter=str(rec.get("segmenter", "")), updated=str(rec.get("updated", "")),
            written_gold=rec.get(_GOLD_MARK),
        )


@dataclass
class Check:
    """How a stored annotation fits the blocks the segmenter makes of the page now."""

    labelled: int  # blocks with a stored label
    blocks: int  # blocks the page has now
    changed: int  # blocks whose key has a label but whose text is not the text labelled
    missing: int  # blocks with no stored label

    @property
    def exact(self) -> bool:
        return self.changed == 0 and self.missing == 0


def apply_labels(blocks: Sequence[Block], ann: Annotation) -> tuple[list[int], Check]:
    """Per block 1/0 from an annotation (a block it does not label is 0), with how well they fit."""
    keys = block_keys(blocks)
    labels, changed, missing = [], 0, 0
    for key, block in zip(keys, blocks, strict=True):
        if key not in ann.labels:
            missing += 1
            labels.append(0)
            continue
        fp = ann.fingerprints.get(key)
        if fp and fp != fingerprint(block.text):
            changed += 1
        labels.append(ann.labels[key])
    return labels, Check(len(ann.labels), len(blocks), changed, missing)


def derived_gold(blocks: Sequence[Block], labels: Sequence[int]) -> str:
    """The gold text of labelled blocks: the body blocks' text, in order, one block per line group."""
    return "\n".join(b.text.strip() for b, y in zip(blocks, labels, strict=True) if y and b.text.strip())


def dump_annotation(rec: dict[str, Any]) -> str:
    """An annotation's JSON: the page's fields first, then one line per block (small diffs, easy to read)."""
    head = {k: v for k, v in rec.items() if k != "blocks"}
    lines = [json.dumps(b, ensure_ascii=False) for b in rec["blocks"]]
    body = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    return body + ',\n "blocks": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def read_annotation(path: str | Path) -> Annotation:
    """One annotation file."""
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
        return Annotation.from_json(rec)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AnnotationError(f"{path}: not a readable annotation ({type(exc).__name__}: {exc})") from exc


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
        self.labels_dir = Path(labels).resolve() if labels is not None else self.dataset / LABELS_DIRNAME
        self.writes_gold = labels is None or self.labels_dir == self.dataset / LABELS_DIRNAME
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


def annotated_pages(dataset: str | Path, labels: str | Path | None = None, *, done_only: bool = True
                    ) -> Iterator[tuple[Page, Annotation]]:
    """The dataset's pages that have annotations (done ones only by default), each with its annotation:
    the loader that joins a labels folder kept elsewhere (e.g. data/annotations/gne-pages in this project)
    with the dataset's pages."""
    store = AnnotationStore(dataset, labels)
    for page_id in store.ids():
        ann = store.load(page_id)
        if ann is None or (done_only and not ann.done):
            continue
        page = store.page(page_id)
        page.meta["annotation_kind"] = ann.kind
        page.block_labels = ann
        yield page, ann
