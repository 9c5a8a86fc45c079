"""The processed form of a dataset: blocks with DOM features, labels and match scores, so training never
re-parses HTML.

One gzip JSON-lines file per dataset and target kind, `<cache_dir>/<dataset>-<key>.jsonl.gz` for the gold's
labels and `<dataset>-convention-<key>.jsonl.gz` for the convention's (data.targets; training/targets.py: those
pages also keep each block's role), where the key hashes the source (pages.jsonl bytes, name/size/mtime of every
page, gold and label file), the segmenter version, the labelling version, the Block fields and, for the
convention, the roles' version. When any of them changes the key changes and the file is rebuilt (older files of
the dataset and target kind are removed). Pages are processed by a process pool (2 workers by
default); a page that fails is kept with its error and no blocks, and counted.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from bodyblocks.classify.integrity import block_inputs
from bodyblocks.config import TARGET_KINDS
from bodyblocks.errors import InputError
from bodyblocks.page.segment import SEGMENTER_VERSION, segment, segment_tree
from bodyblocks.runtime.files import atomic_path
from bodyblocks.training.datasets import ANNOTATIONS, page_from_record, read_records, resolve_dataset, site_of
from bodyblocks.training.labels import LABELS_VERSION, label_page
from bodyblocks.training.splits import split_of
from bodyblocks.training.targets import ROLES_VERSION, convention_targets, page_roles
from bodyblocks.types import Block, Page

ENV_CACHE = "BODYBLOCKS_CACHE"
CACHE_FORMAT = "1"  # bump when the file layout below changes
BLOCK_FIELDS = tuple(f.name for f in fields(Block))  # blocks are stored as value lists in this order


def made_with() -> dict[str, str]:
    """The versions of what a learned part reads that training records in its checkpoint (config.json's
    "made_with"): the segmenter's blocks, the block features (a digest of their names) and the labels. A checkpoint
    made with other blocks or features reads blocks it never saw in training: loading it says so
    (classify/integrity.stale_inputs; tests/test_shipped_versions.py)."""
    return {**block_inputs(), "labels": LABELS_VERSION}


@dataclass
class CachedPage:
    """One processed page: what a block classifier trains and is scored on."""

    id: str
    dataset: str
    lang: str | None
    source_split: str | None  # the source's own split field
    site: str  # group key of the project splits
    title: str
    blocks: list[Block]
    labels: list[int]  # 1 body / 0 not, aligned with blocks (the target kind's: the gold's or the convention's)
    scores: list[float]  # share of each block's characters aligned to body text
    gold: str | None  # gold text (None: the page has none)
    gold_coverage: float = 0.0  # share of the reference body text matched to blocks
    method: str = "none"  # how labels were made: gold, annotated (L3S spans), none
    encoding: str = ""
    replaced: bool = False
    error: str | None = None  # why the page could not be processed
    snippets: dict[str, list[str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    split: str | None = None  # project split (train/val/test), filled by load_cached from data/splits
    roles: list[str] | None = None  # each block's role (training/targets.py), in a convention cache only

    @property
    def has_gold(self) -> bool:
        return self.gold is not None and bool(self.gold.strip())


def default_cache_dir() -> Path:
    """$BODYBLOCKS_CACHE, else ~/.cache/bodyblocks/datasets."""
    env = os.environ.get(ENV_CACHE)
    return Path(env) if env else Path.home() / ".cache" / "bodyblocks" / "datasets"


def _check_targets(targets: str) -> None:
    if targets not in TARGET_KINDS:
        raise ValueError(f"targets must be one of {TARGET_KINDS}, got {targets!r}")


def source_key(dataset_dir: str | Path, targets: str = "gold") -> str:
    """Hash of everything a dataset's cache of this target kind depends on."""
    _check_targets(targets)
    folder = Path(dataset_dir)
    h = hashlib.sha256()
    h.update(f"{CACHE_FORMAT}|{SEGMENTER_VERSION}|{LABELS_VERSION}|{','.join(BLOCK_FIELDS)}|".encode())
    if targets != "gold":  # the gold's key is unchanged by the target kinds (no rebuild)
        h.update(f"targets={targets}|{ROLES_VERSION}|".encode())
    h.update((folder / "pages.jsonl").read_bytes())
    for sub in ("html", "gold", "labels", ANNOTATIONS):
        if (folder / sub).is_dir():
            for entry in sorted(os.scandir(folder / sub), key=lambda e: e.name):
                st = entry.stat()
                h.update(f"{sub}/{entry.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _stem(folder: Path, targets: str) -> str:
    """The file name's part before the key: the dataset's name, and the target kind unless it is the gold."""
    return folder.name if targets == "gold" else f"{folder.name}-{targets}"


def cache_path(dataset_dir: str | Path, cache_dir: str | Path | None = None, targets: str = "gold") -> Path:
    """Where a dataset's current cache file of this target kind lives (it may not exist yet)."""
    folder = Path(dataset_dir)
    return Path(cache_dir or default_cache_dir()) / f"{_stem(folder, targets)}-{source_key(folder, targets)}.jsonl.gz"


def process_page(page: Page, targets: str = "gold") -> CachedPage:
    """Segment and label one page (the labels of the target kind); a bad page keeps its error instead of raising."""
    _check_targets(targets)
    base = dict(id=page.id, dataset=page.dataset or "", lang=page.lang, source_split=page.split,
                site=site_of(page), gold=page.gold, snippets=page.snippets, meta=page.meta)
    error = page.meta.get("error")
    if error:
        return CachedPage(title="", blocks=[], labels=[], scores=[], error=str(error), **base)
    try:
        doc, root = segment_tree(page.html) if targets != "gold" else (segment(page.html), None)
    except InputError as exc:
        return CachedPage(title="", blocks=[], labels=[], scores=[], error=f"{exc.reason}: {exc}", **base)
    al = label_page(page, doc.blocks)
    labels, scores, roles = al.labels, al.scores, None
    if targets == "convention":
        roles = page_roles(page, doc, root, al.labels)
        labels = convention_targets(roles, al.labels)
        scores = [s if r == "body" else 0.0 for s, r in zip(al.scores, roles, strict=True)]
    return CachedPage(title=doc.title, blocks=doc.blocks, labels=labels, scores=scores,
                      gold_coverage=al.gold_coverage, method=al.method, encoding=doc.encoding,
                      replaced=doc.replaced, roles=roles, **base)


def to_json(cp: CachedPage) -> dict[str, Any]:
    """A JSON-ready dict; blocks become value lists in BLOCK_FIELDS order, scores are rounded."""
    rec = {k: v for k, v in asdict(cp).items() if k not in ("blocks", "split")}
    if cp.roles is None:  # a gold cache's lines stay as they were
        del rec["roles"]
    rec["blocks"] = [[getattr(b, f) for f in BLOCK_FIELDS] for b in cp.blocks]
    rec["scores"] = [round(s, 4) for s in cp.scores]
    return rec


def from_json(rec: dict[str, Any]) -> CachedPage:
    """Inverse of to_json."""
    blocks = [Block(**dict(zip(BLOCK_FIELDS, values, strict=True))) for values in rec.pop("blocks")]
    for b in blocks:
        if b.marks:  # JSON lists back to the tuples the segmenter makes
            b.marks = tuple((kind, text, href) for kind, text, href in b.marks)
        else:
            b.marks = ()
    return CachedPage(blocks=blocks, **rec)


def _work(task: tuple[str, dict[str, Any], str]) -> str:
    """Pool worker: one record -> one JSON line (strings cross the process boundary cheaply)."""
    folder, rec, targets = task
    page = page_from_record(folder, rec)
    try:
        cp = process_page(page, targets)
    except Exception as exc:  # noqa: BLE001 - a bug on one page must not lose a long build; it is recorded
        cp = CachedPage(id=page.id, dataset=page.dataset or "", lang=page.lang, source_split=page.split,
                        site=page.id, title="", blocks=[], labels=[], scores=[], gold=page.gold,
                        error=f"crash: {type(exc).__name__}: {exc}")
    return json.dumps(to_json(cp), ensure_ascii=False)


def build_cache(dataset: str | Path, cache_dir: str | Path | None = None, workers: int = 2,
                targets: str = "gold") -> Path:
    """Process every page of a dataset into its cache file of this target kind (written atomically); returns the
    path."""
    folder = resolve_dataset(dataset)
    target = cache_path(folder, cache_dir, targets)
    target.parent.mkdir(parents=True, exist_ok=True)
    tasks = [(str(folder), rec, targets) for rec in read_records(folder)]
    with atomic_path(target) as tmp, gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6) as out:
        for line in _map(tasks, workers):
            out.write(line + "\n")
    stale = re.compile(rf"{re.escape(_stem(folder, targets))}-[0-9a-f]{{16}}\.jsonl\.gz")
    for old in target.parent.iterdir():
        if old != target and stale.fullmatch(old.name):
            old.unlink()
    return target


def _map(tasks: list[tuple[str, dict[str, Any], str]], workers: int) -> Iterator[str]:
    """Results in task order, from a process pool when workers > 1."""
    if workers <= 1:
        yield from map(_work, tasks)
        return
    with Pool(workers) as pool:
        yield from pool.imap(_work, tasks, chunksize=4)


def load_cached(dataset: str | Path, cache_dir: str | Path | None = None, workers: int = 2,
                build: bool = True, targets: str = "gold") -> list[CachedPage]:
    """A dataset's processed pages, building (or rebuilding) the cache when it is missing or stale.

    Args:
        dataset: a dataset folder, or its name under the datasets root.
        cache_dir: default $BODYBLOCKS_CACHE or ~/.cache/bodyblocks/datasets.
        workers: processes used when the cache must be built.
        build: False raises FileNotFoundError instead of building.
        targets: the labels' kind, "gold" or "convention" (data.targets; training/targets.py).
    Returns:
        CachedPage per page in pages.jsonl order, with `split` set from data/splits when present.
    """
    folder = resolve_dataset(dataset)
    path = cache_path(folder, cache_dir, targets)
    if not path.is_file():
        if not build:
            raise FileNotFoundError(f"no current cache for {folder.name} at {path}")
        build_cache(folder, cache_dir, workers, targets)
    splits = split_of(folder)
    pages = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            cp = from_json(json.loads(line))
            cp.split = splits.get(cp.id)
            pages.append(cp)
    return pages


def timed_build(dataset: str | Path, cache_dir: str | Path | None = None, workers: int = 2) -> tuple[Path, float]:
    """Build a dataset's cache and return (path, seconds)."""
    start = time.perf_counter()
    path = build_cache(dataset, cache_dir, workers)
    return path, time.perf_counter() - start
