"""The page's kind, predicted: article, forum, product, collection, listing, documentation or service.

    model = KindModel.load()                      # the shipped checkpoints/page-kind (safetensors + JSON)
    model.predict(doc, ex)                        # "article"; the page segmented by a block extractor, its Extraction
    page_kinds(docs, extractions)                 # the shipped model's, a page each (None where it is not there)
    rows = page_rows(docs); kinds_of(rows, extractions)   # the same in two steps (extraction/extractor.py's 1 and 3)

Boosted trees (scikit-learn's HistGradientBoostingClassifier, one tree per kind and iteration, fitted by
benchmarks/page_kind.py on wcxb-dev's train and val pages) on one row of page-level numbers
(page/kind_features.py: block statistics, cue words, the canonical URL's path, structured-data types, and what the
block extractor kept of the page: the shipped default's decisions in training), flattened
into the node arrays of classify/trees.py and walked by its GbtModel in NumPy: no scikit-learn at inference.
The kinds are wcxb-dev's page types: a page of another source (news) is an article. Block extractors set
Extraction.page_kind (extraction/extractor.py) after their decision, which the kind reads; the decision does not read
the kind.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.classify.integrity import DIGESTS, WEIGHTS, file_sha256, read_config, verify_files
from bodyblocks.classify.trees import _TREE_ARRAYS, GbtModel
from bodyblocks.config import GbtConfig
from bodyblocks.page.kind_features import CUES, KIND_FEATURES, URL, decision_features, kind_features
from bodyblocks.page.metadata import METADATA
from bodyblocks.runtime.files import REPO_ROOT, atomic_path, write_json
from bodyblocks.types import Document, Extraction

KIND = "page-kind"  # config.json "kind"
FOLDER = "page-kind"  # the shipped folder under checkpoints/
FORMAT_VERSION = 1
PAGE_KINDS = ("article", "forum", "product", "collection", "listing", "documentation", "service")


@dataclass
class KindModel:
    """A forest of `len(classes)` trees an iteration (tree t is class t % len(classes)'s) and each class's
    baseline log-odds: the class with the highest sum of baseline and leaf values is the page's kind."""

    classes: tuple[str, ...]
    forest: GbtModel  # every tree, its baseline unused
    baselines: np.ndarray  # (classes,)
    metrics: dict[str, Any] = field(default_factory=dict)

    def raw(self, x: np.ndarray) -> np.ndarray:
        """(rows, classes) log-odds of rows of KIND_FEATURES."""
        x = np.atleast_2d(x)
        leaves = self.forest.leaf_values(x)  # (rows, trees), trees iteration-major
        k = len(self.classes)
        return self.baselines + leaves.reshape(len(x), -1, k).sum(axis=1)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(rows, classes) P(kind) (softmax of raw)."""
        z = self.raw(x)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def predict_rows(self, x: np.ndarray) -> list[str]:
        """The kind of each row of KIND_FEATURES."""
        return [self.classes[i] for i in np.argmax(self.raw(x), axis=1)]

    def predict(self, doc: Document, ex: Extraction | None = None) -> str:
        """The kind of a page segmented by a block extractor (its cues and metadata in doc.extra), given what the
        extractor kept of it (`ex`; None: unknown)."""
        return self.predict_rows(kind_row(features_of(doc), ex))[0]

    # ------------------------------------------------------------------------------------- files
    def save(self, directory: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """model.safetensors (the node arrays) and config.json (classes, baselines, feature names, digest)."""
        from safetensors.numpy import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        arrays = {k: np.ascontiguousarray(self.forest.trees[k]) for k in _TREE_ARRAYS}
        with atomic_path(out / WEIGHTS) as tmp:
            save_file(arrays, str(tmp), metadata={"format_version": str(FORMAT_VERSION)})
        write_json(out / "config.json", {
            "format_version": FORMAT_VERSION, "kind": KIND, "classes": list(self.classes),
            "baselines": [float(b) for b in self.baselines], "depth": self.forest.depth,
            "n_trees": self.forest.n_trees, "feature_names": list(KIND_FEATURES), "metrics": self.metrics,
            **(extra or {}), DIGESTS: {WEIGHTS: file_sha256(out / WEIGHTS)},
        })
        return out

    @classmethod
    def load(cls, directory: str | Path | None = None) -> KindModel:
        """Read a folder `save` wrote (None: the shipped one); a ValueError of one line when it cannot be used."""
        from safetensors.numpy import load_file

        path = shipped_folder() if directory is None else Path(directory)
        meta = read_config(path / "config.json")
        if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != KIND:
            raise ValueError(f"{path}: not a page-kind checkpoint of format {FORMAT_VERSION}")
        if meta.get("feature_names") != list(KIND_FEATURES):
            raise ValueError(f"{path}: made for other page features than these (train it again: "
                             "python -m benchmarks.page_kind)")
        verify_files(path, meta)
        classes = tuple(str(c) for c in meta.get("classes", ()))
        baselines = np.asarray(meta.get("baselines", ()), dtype=np.float64)
        trees = load_file(str(path / WEIGHTS))
        missing = set(_TREE_ARRAYS) - set(trees)
        if missing:
            raise ValueError(f"{path}: {WEIGHTS} lacks {sorted(missing)}")
        n, k = len(trees["value"]), len(classes)
        links = np.concatenate((trees["left"], trees["right"], trees["roots"])).astype(np.int64)
        if (k < 2 or len(baselines) != k or len(trees["roots"]) % k or (links.size and (links.min() < 0
                or links.max() >= n)) or np.any(trees["feature"] < 0)
                or np.any(trees["feature"] >= len(KIND_FEATURES))):
            raise ValueError(f"{path}: tree arrays that do not fit its {k} classes and {len(KIND_FEATURES)} features")
        if not (np.isfinite(trees["value"]).all() and np.isfinite(baselines).all()):
            raise ValueError(f"{path}: leaf values and baselines must be finite numbers")
        forest = GbtModel(GbtConfig(), trees, 0.0, int(meta["depth"]))
        return cls(classes, forest, baselines, meta.get("metrics", {}))


def shipped_folder() -> Path:
    """The shipped page-kind folder: the installed package's data (bodyblocks/checkpoints/page-kind, a wheel), else
    the source checkout's checkpoints/page-kind (as checkpoints.shipped_root, which imports the extractors)."""
    packaged = Path(__file__).resolve().parents[1] / "checkpoints" / FOLDER
    return packaged if (packaged / "config.json").exists() else REPO_ROOT / "checkpoints" / FOLDER


def with_url(doc: Document, url: str | None) -> Document:
    """doc with the page's own URL noted for its kind (doc.extra[URL]) when it is known; returned."""
    if url:
        doc.extra[URL] = url
    return doc


def features_of(doc: Document, canonical_only: bool = False) -> np.ndarray:
    """The page's row of PAGE_FEATURES: its blocks, title, URL (doc.extra[URL] where its caller gave it, else its
    canonical URL, metadata.py; `canonical_only`: the canonical one in any case) and markup cues (kinds.add_kind)."""
    url = None if canonical_only else doc.extra.get(URL)
    if not url:
        url = getattr(doc.extra.get(METADATA), "canonical_url", None)
    return kind_features(doc.blocks, doc.title, url, doc.extra.get(CUES))


def kind_row(page_row: np.ndarray, ex: Extraction | None) -> np.ndarray:
    """A row of KIND_FEATURES: the page's (features_of), then what the extractor kept of it (None: unknown, NaN)."""
    decision = (decision_features(ex.blocks, ex.probabilities, ex.kept, ex.confidence) if ex is not None
                else decision_features(None, None, None, None))
    return np.concatenate([page_row, decision])


@functools.cache
def shipped_model() -> KindModel | None:
    """The shipped model, loaded once a process; None (said once on stderr) when it is not there or unusable."""
    try:
        return KindModel.load()
    except (OSError, ValueError) as exc:
        print(f"bodyblocks: no page kinds: {exc}", file=sys.stderr)
        return None


def page_rows(docs: Sequence[Document]) -> list[np.ndarray | None]:
    """Each page's features_of (None for a page with no block, and for every page without the shipped model)."""
    if shipped_model() is None:
        return [None] * len(docs)
    return [features_of(doc) if doc.blocks else None for doc in docs]


def kinds_of(rows: Sequence[np.ndarray | None], extractions: Sequence[Extraction | None]) -> list[str | None]:
    """The pages' kinds by the shipped model from their page_rows and what the extractor kept of each, every row
    walked through the trees at once (None where a page has no row)."""
    model = shipped_model()
    have = [(i, kind_row(row, extractions[i])) for i, row in enumerate(rows) if row is not None]
    kinds: list[str | None] = [None] * len(rows)
    if model is None or not have:
        return kinds
    for (i, _), kind in zip(have, model.predict_rows(np.stack([row for _, row in have])), strict=True):
        kinds[i] = kind
    return kinds


def page_kinds(docs: Sequence[Document], extractions: Sequence[Extraction | None] | None = None
               ) -> list[str | None]:
    """The pages' kinds by the shipped model (page_rows, then kinds_of); `extractions`: what a block extractor made
    of each page (None: its decisions unknown)."""
    return kinds_of(page_rows(docs), extractions if extractions is not None else [None] * len(docs))
