"""People's block labels (`bodyblocks annotate`): the annotation file of a page, keyed by the blocks' xpaths.

A page's annotation, `<labels>/<id>.json`:

    {"format": 1, "id": "gne-163-1", "segmenter": "6", "kind": "news", "done": true, "note": "",
     "updated": "2026-12-01T17:02:11Z",
     "blocks": [{"key": "/html[1]/body[1]/div[2]/p[3]", "label": 1, "fp": "3f09a1c2d4"}, ...]}

`key` is the block's xpath; the second and later blocks of one element (text either side of a nested block)
get `#2`, `#3`, ... after it. `fp` fingerprints the block's text (SHA-1 of its characters without white
space, 10 hex digits), so a label file holds no page text and still notices when the segmenter's blocks
moved (`apply_labels`). The dataset readers (datasets.py) take a dataset's done annotations from
DATASET/annotations/ and label_page (labels.py) takes them as they are; annotate/store.py writes them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.page.segment import SEGMENTER_VERSION
from bodyblocks.types import Block

FORMAT = 1
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
    changed: int  # blocks whose key has a label but whose text is not the text labelled (label not used)
    missing: int  # blocks with no stored label under their key nor a unique stored text
    moved: int = 0  # blocks under another key whose text is a labelled block's (one only): its label is used

    @property
    def exact(self) -> bool:
        """Every block has its own label: the labels hold for these blocks as they are."""
        return self.changed == 0 and self.missing == 0


def apply_labels(blocks: Sequence[Block], ann: Annotation) -> tuple[list[int], Check]:
    """Per block 1/0 from an annotation, with how well they fit the blocks as the segmenter makes them now.

    A block takes the label stored under its key when the stored fingerprint is its text's; else the label of
    the one stored block with its text, when exactly one has it (the block moved: a sibling appeared or went);
    else 0, counted as changed or missing. Callers train only on exact pages (labels.align_labelled)."""
    keys = block_keys(blocks)
    by_fp: dict[str, list[str]] = {}
    for key, fp in ann.fingerprints.items():
        if fp:
            by_fp.setdefault(fp, []).append(key)
    labels, changed, missing, moved = [], 0, 0, 0
    for key, block in zip(keys, blocks, strict=True):
        fp = fingerprint(block.text)
        stored = ann.fingerprints.get(key)
        if key in ann.labels and (not stored or stored == fp):
            labels.append(ann.labels[key])
            continue
        same = by_fp.get(fp, [])
        if len(same) == 1:
            moved += 1
            labels.append(ann.labels[same[0]])
            continue
        labels.append(0)
        if key in ann.labels:
            changed += 1
        else:
            missing += 1
    return labels, Check(len(ann.labels), len(blocks), changed, missing, moved)


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
