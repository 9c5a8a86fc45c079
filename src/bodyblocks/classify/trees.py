"""Gradient-boosted trees on the block classifier's non-neural inputs: the baseline a neural model must beat.

    model = GbtModel.load("checkpoints/gbt")               # safetensors + JSON; nothing is unpickled
    p = model.page_probabilities(doc.blocks)               # NumPy-only inference (training/fit_trees.py fits them)
    GbtScorer(model).scores(docs)                          # a block extractor's part (extraction/extractor.py)

Inputs per block (`gbt_features`), all computed without a neural network:
  1. features.block_features of the block (FEATURE_NAMES: DOM facts, text statistics, place in the page);
  2. the same row for the `neighbours` blocks before and after it (NaN past the page's ends): a cheap
     stand-in for the Transformer's page context;
  3. `tag_buckets` 0/1 indicators of its tag-path tokens (features.tag_path_tokens hashed by CRC-32): the
     neural model's tag-path input without the embedding;
  3b. one 0/1 indicator per token of the learned vocabulary `tokens` (training/gbt.site_vocabulary: the
     tag-path tokens that most training sites share), each token its own column;
  4. with `groups`, GROUP_NAMES: the block's group (the blocks of the page with its tag path: the items of one
     list, the rows of one table, the cards of one grid, the paragraphs of one article) as a whole: its size,
     its share of the page's text, its link density, its items' mean length, how far it spreads over the page,
     and the page's link density, so that a listing's short linked items are seen as the list they make;
The block text enters only through the text statistics of (1); hashed n-grams need a learned embedding.
Persistence: the fitted trees are flattened into node arrays (feature, threshold, children, NaN direction,
leaf value) in model.safetensors, with the baseline log-odds and the settings in config.json. Loading never
unpickles. Prediction runs the folder's trees.onnx on ONNX Runtime when it is there (`bodyblocks export`
writes it and checks it against the NumPy walk: 0.65 against 3.2 ms for a page's rows), else walks all trees
at once in NumPy: inference needs neither scikit-learn nor torch.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bodyblocks.classify.integrity import DIGESTS, WEIGHTS, check_gbt_config, file_sha256, read_config, verify_files
from bodyblocks.classify.model_inputs import path_parts
from bodyblocks.classify.onnx_model import TREES, trees_session
from bodyblocks.config import GbtConfig, from_dict
from bodyblocks.page.features import (
    FEATURE_NAMES,
    GROUP_NAMES,
    TAIL,
    block_features,
    group_features,
    segment_tokens,
    tag_bags,
    tail_tokens,
)
from bodyblocks.runtime.files import atomic_path, write_json
from bodyblocks.types import Block, Document

if TYPE_CHECKING:
    from bodyblocks.classify.model_inputs import PageInputs

KIND = "gbt"  # config.json "kind" of a gbt checkpoint folder
FORMAT_VERSION = 1  # of the checkpoint folder (config.json + model.safetensors); bump on layout changes
_TREE_ARRAYS = ("feature", "threshold", "left", "right", "nan_left", "value", "roots")
_CHUNK = 2048  # rows walked through the trees at once: (rows x trees) index arrays stay a few MB


# ----------------------------------------------------------------------------------------- features


def feature_names(cfg: GbtConfig) -> list[str]:
    """Column names of gbt_features, in order."""
    names = list(FEATURE_NAMES)
    for k in range(1, cfg.neighbours + 1):
        names += [f"prev{k}:{n}" for n in FEATURE_NAMES] + [f"next{k}:{n}" for n in FEATURE_NAMES]
    names += [f"tag{j}" for j in range(cfg.tag_buckets)] + [f"token:{t}" for t in cfg.tokens]
    return names + (list(GROUP_NAMES) if cfg.groups else [])


class _Vocabulary:
    """A token vocabulary's column of each token, and the columns of each tag path seen (sites repeat theirs)."""

    # tag paths (and path segments per distance from the end) remembered; past it the memo starts again (bounded
    # memory). 65,536 prefix paths held a worker's RSS 70 MB higher after 500 dataset pages than 4,096
    MAX_PATHS = 1 << 12

    def __init__(self, tokens: tuple[str, ...]) -> None:
        self.index = {t: j for j, t in enumerate(tokens)}
        self.paths: dict[str, list[int]] = {}
        # per distance from the path's end k (0: any segment, its own tokens; k: the tail's "k:" tokens)
        self.segments: list[dict[str, tuple[int, ...]]] = [{} for _ in range(TAIL + 1)]

    def columns(self, tag_path: str) -> list[int]:
        """The columns of the vocabulary's tokens among tag_path_tokens(tag_path): those of each segment's own
        tokens, and of its tail's prefixed ones, from a memo of each segment's (a new site brings new paths more
        than new segments; most segments hold no token of the vocabulary)."""
        cols = self.paths.get(tag_path)
        if cols is None:
            if len(self.paths) >= self.MAX_PATHS:
                self.paths.clear()
            hits = set(chain.from_iterable(path_parts(tag_path, self.segments, self._segment)))
            cols = self.paths[tag_path] = sorted(hits)
        return cols

    def _segment(self, segment: str, k: int) -> tuple[int, ...]:
        memo = self.segments[k]
        if len(memo) >= self.MAX_PATHS:
            memo.clear()
        index = self.index
        tokens = tail_tokens(segment, k) if k else segment_tokens(segment)
        cols = memo[segment] = tuple(index[t] for t in tokens if t in index)
        return cols


@functools.lru_cache(maxsize=8)
def _vocabulary(tokens: tuple[str, ...]) -> _Vocabulary:
    return _Vocabulary(tokens)


def vocabulary_hits(blocks: Sequence[Block], tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(block, token column) of each vocabulary token that a block's tag path holds (features.tag_path_tokens), as
    two int64 arrays."""
    vocab = _vocabulary(tuple(tokens))
    per_block = [vocab.columns(b.tag_path) for b in blocks]
    lengths = np.fromiter(map(len, per_block), np.int64, len(per_block))
    cols = np.fromiter(chain.from_iterable(per_block), np.int64, int(lengths.sum()))
    return np.repeat(np.arange(len(per_block)), lengths), cols


def gbt_features(blocks: Sequence[Block], cfg: GbtConfig, base: np.ndarray | None = None,
                 tags: tuple[np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
    """(n, len(feature_names(cfg))) float64 inputs of one page's blocks (module docstring).

    What the caller has computed already (the ensemble's model) is not computed again: `base`, the page's
    block_features; `tags`, its tag_bags (ids, offsets) for a bucket count that is a multiple of
    cfg.tag_buckets (CRC-32 mod k*b mod b is CRC-32 mod b: the same ids).
    """
    base = (block_features(blocks) if base is None else base).astype(np.float64)  # (n, F)
    n, f = base.shape
    groups = len(GROUP_NAMES) if cfg.groups else 0
    width = f * (1 + 2 * cfg.neighbours) + cfg.tag_buckets + len(cfg.tokens) + groups
    out = np.empty((n, width))  # every column written below, in feature_names' order
    out[:, :f] = base
    for k in range(1, cfg.neighbours + 1):
        prev, after = out[:, (2 * k - 1) * f : 2 * k * f], out[:, 2 * k * f : (2 * k + 1) * f]
        kept = max(n - k, 0)  # rows with a block k before (after) them
        prev[:k], prev[k:] = np.nan, base[:kept]  # block i - k
        after[:kept], after[kept:] = base[k:], np.nan  # block i + k
    tag_start = f * (1 + 2 * cfg.neighbours)
    indicators = out[:, tag_start : tag_start + cfg.tag_buckets]
    indicators[:] = 0.0
    if cfg.tag_buckets and n:
        if tags is not None and tags[2] % cfg.tag_buckets == 0:
            ids, offsets = _bucket(tags[0], cfg.tag_buckets), tags[1]
        else:
            ids, offsets = tag_bags(blocks, cfg.tag_buckets)
        rows = np.repeat(np.arange(n), np.diff(np.append(offsets, len(ids))))
        indicators[rows, ids] = 1.0
    vocab_start = tag_start + cfg.tag_buckets
    if cfg.tokens:
        hits = out[:, vocab_start : vocab_start + len(cfg.tokens)]
        hits[:] = 0.0
        hits[vocabulary_hits(blocks, cfg.tokens)] = 1.0
    if cfg.groups:
        out[:, vocab_start + len(cfg.tokens) :] = group_features(blocks)
    return out


def _bucket(ids: np.ndarray, buckets: int) -> np.ndarray:
    """ids % buckets: for a power of two, from a bit mask (the same values, negative ids included)."""
    return ids & (buckets - 1) if buckets & (buckets - 1) == 0 else ids % buckets


# ----------------------------------------------------------------------------------------- model
@dataclass
class GbtModel:
    """Boosted trees as flat node arrays; leaves point to themselves, so `depth` steps reach every leaf."""

    cfg: GbtConfig
    trees: dict[str, np.ndarray]  # _TREE_ARRAYS: per node feature, threshold, left, right, nan_left, value
    baseline: float  # log-odds before the first tree
    depth: int  # longest root-to-leaf path
    threshold: float = 0.5  # P(body) at which a block is kept (tuned on validation)
    confident: float = 0.5  # a page with no block at or above this is low-confidence
    rescue: float | None = None  # on a page with no block at the threshold, keep those at or above this
    metrics: dict[str, Any] = field(default_factory=dict)
    container: list[float] | None = None  # decision step 3 (share, inside, outside), extraction/decision.py
    onnx: Any = field(default=None, repr=False, compare=False)  # trees.onnx's per-process session, or None

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.trees["roots"])

    @property
    def engine(self) -> str:
        """What walks the trees: "onnx" (the folder's trees.onnx on ONNX Runtime) or "numpy"."""
        return "numpy" if self.onnx is None else "onnx"

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Log-odds of body for rows of gbt_features: baseline + the leaf value of every tree (ONNX Runtime's
        compiled walk when the folder has trees.onnx, which gives the NumPy walk's answers; else that walk)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if self.onnx is not None and len(x):
            return self.onnx.get().run(None, {"X": x})[0][:, 0].astype(np.float64)
        return self._numpy_raw(x)

    def prepare_walk(self) -> str:
        """Open the ONNX Runtime session now (a stale trees.onnx fails here, not on the first page); the engine."""
        if self.onnx is not None:
            self.onnx.get()
        return self.engine

    def _numpy_raw(self, x: np.ndarray) -> np.ndarray:
        out = np.full(len(x), self.baseline)
        for start in range(0, len(x), _CHUNK):
            out[start : start + _CHUNK] += self._leaf_values(x[start : start + _CHUNK]).sum(axis=1)
        return out

    @functools.cached_property
    def _walk_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """feature, threshold, nan-goes-right, children (node * 2 + went_right) and is-leaf, for _leaf_values."""
        t = self.trees
        own = np.arange(len(t["value"]))
        kids = np.stack((t["left"], t["right"]), axis=1).astype(np.intp).ravel()
        return (t["feature"].astype(np.intp), t["threshold"], t["nan_left"] == 0, kids, t["left"] == own)

    def leaf_values(self, x: np.ndarray) -> np.ndarray:
        """(rows, trees) value of the leaf each row reaches in each tree (the NumPy walk; float64 rows of the
        forest's features): a forest of several classes' trees sums them by class (classify/pagekind.py)."""
        return self._leaf_values(np.ascontiguousarray(x, dtype=np.float64))

    def _leaf_values(self, x: np.ndarray) -> np.ndarray:
        """(rows, trees) value of the leaf each row reaches in each tree.

        Every (row, tree) pair walks down one level per step; pairs that reached a leaf leave the walk, so a
        step costs only the pairs still descending (most leaves are far shallower than the deepest one).
        """
        feature, threshold, nan_right, kids, is_leaf = self._walk_arrays
        n, width = x.shape
        flat = np.ascontiguousarray(x).ravel()
        nodes = np.tile(self.trees["roots"].astype(np.intp), n)  # (rows * trees,), row-major
        active = np.flatnonzero(~is_leaf[nodes])
        node, base = nodes[active], (active // self.n_trees) * width
        for _ in range(self.depth):  # np.take: faster than fancy indexing on 1-D arrays
            if not len(node):
                break
            v = flat.take(base + feature.take(node))
            right = ~(v <= threshold.take(node))  # NaN compares False: fixed below by the node's NaN direction
            nan = np.isnan(v)
            if nan.any():
                right[nan] = nan_right[node[nan]]
            node = kids.take(2 * node + right)
            leaf = is_leaf.take(node)
            if leaf.any():
                nodes[active[leaf]] = node[leaf]
                keep = ~leaf
                active, node, base = active[keep], node[keep], base[keep]
        return self.trees["value"][nodes].reshape(n, self.n_trees)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """P(body) per row."""
        return 1.0 / (1.0 + np.exp(-self.raw(x)))

    def page_probabilities(self, blocks: Sequence[Block], base: np.ndarray | None = None,
                           tags: tuple[np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
        """P(body) of each block of one page (float32; empty for a page with no block); `base`, `tags`: as
        gbt_features."""
        return self.pages_probabilities([(blocks, base, tags)])[0]

    def pages_probabilities(self, pages: Sequence[tuple[Sequence[Block], np.ndarray | None,
                                                        tuple[np.ndarray, np.ndarray, int] | None]]
                            ) -> list[np.ndarray]:
        """page_probabilities of several pages ((blocks, base, tags) each), their rows walked in one call."""
        if not pages:
            return []
        rows = [gbt_features(blocks, self.cfg, base, tags) for blocks, base, tags in pages if blocks]
        x = rows[0] if len(rows) == 1 else np.concatenate(rows) if rows else None
        p = self.predict_proba(x).astype(np.float32) if x is not None else np.zeros(0, np.float32)
        return [p] if len(pages) == 1 else np.split(p, np.cumsum([len(blocks) for blocks, _, _ in pages])[:-1])

    # ------------------------------------------------------------------------------------- checkpoints
    def save(self, directory: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write model.safetensors (node arrays) and config.json (settings, baseline, threshold) atomically."""
        from safetensors.numpy import save_file

        from bodyblocks.version import __version__

        out = Path(directory)
        (out / TREES).unlink(missing_ok=True)  # made from the trees being replaced: `bodyblocks export` anew
        arrays = {k: np.ascontiguousarray(self.trees[k]) for k in _TREE_ARRAYS}
        with atomic_path(out / "model.safetensors") as tmp:
            save_file(arrays, str(tmp), metadata={"format_version": str(FORMAT_VERSION)})
        digests = {WEIGHTS: file_sha256(out / WEIGHTS)}  # checked at load (integrity.verify_files)
        write_json(out / "config.json", {
            "format_version": FORMAT_VERSION, "kind": KIND, "bodyblocks_version": __version__,
            "gbt": asdict(self.cfg), "baseline": self.baseline, "depth": self.depth, "n_trees": self.n_trees,
            "threshold": self.threshold, "confident": self.confident, "rescue": self.rescue,
            "container": self.container, "metrics": self.metrics,
            "feature_names": feature_names(self.cfg), **(extra or {}), DIGESTS: digests,
        })
        return out

    @classmethod
    def load(cls, directory: str | Path) -> GbtModel:
        """Read a folder written by `save` (safetensors and JSON only)."""
        from safetensors.numpy import load_file

        path = Path(directory)
        meta = read_config(path / "config.json")
        if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != KIND:
            raise ValueError(f"{path}: not a gbt checkpoint of format {FORMAT_VERSION}")
        check_gbt_config(path, meta)
        verify_files(path, meta)  # model.safetensors and trees.onnx: the files config.json records
        cfg = from_dict(GbtConfig, meta["gbt"], prefix="gbt.")
        trees = load_file(str(path / "model.safetensors"))
        missing = set(_TREE_ARRAYS) - set(trees)
        if missing:
            raise ValueError(f"{path}: model.safetensors lacks {sorted(missing)}")
        n, width = len(trees["value"]), len(feature_names(cfg))
        links = np.concatenate((trees["left"], trees["right"], trees["roots"])).astype(np.int64)
        bad_links = links.size > 0 and (links.min() < 0 or links.max() >= n)
        if bad_links or np.any(trees["feature"] >= width) or np.any(trees["feature"] < 0):
            raise ValueError(f"{path}: tree arrays point outside the nodes or the {width} features")
        if not (np.isfinite(trees["value"]).all() and np.isfinite(float(meta["baseline"]))):
            raise ValueError(f"{path}: leaf values and the baseline must be finite numbers")
        return cls(cfg, trees, float(meta["baseline"]), int(meta["depth"]), float(meta["threshold"]),
                   float(meta["confident"]), None if meta.get("rescue") is None else float(meta["rescue"]),
                   meta.get("metrics", {}), meta.get("container"), trees_session(path))


class GbtScorer:
    """The boosted trees' P(body) (ONNX Runtime or NumPy: no torch, no scikit-learn needed)."""

    def __init__(self, model: GbtModel, tag_buckets: int | None = None) -> None:
        """`tag_buckets`: the bucket count of the tag-path ids handed to `scores` with the model's inputs
        (None: the trees hash the tag paths themselves)."""
        self.model, self.tag_buckets = model, tag_buckets
        model.prepare_walk()

    def scores(self, docs: Sequence[Document], inputs: Sequence[tuple[int, PageInputs | None]] | None = None
               ) -> dict[int, np.ndarray]:
        """P(body) of the pages named in `inputs` (index, the model's inputs of that page or None), all walked
        through the trees in one call; None: every page, from its blocks alone."""
        if inputs is None:
            inputs = [(i, None) for i in range(len(docs))]
        rows = []
        for i, page in inputs:
            base = tags = None
            if page is not None:
                base = page.features[:, : len(FEATURE_NAMES)]  # the model's (model.groups: then its groups)
                tags = (page.tag_ids, page.tag_offsets, self.tag_buckets) if self.tag_buckets else None
            rows.append((docs[i].blocks, base, tags))
        return dict(zip((i for i, _ in inputs), self.model.pages_probabilities(rows), strict=True))
