"""Gradient-boosted trees on the block classifier's non-neural inputs: the baseline a neural model must beat.

    model = train_gbt(splits["train"], splits["val"])      # scikit-learn HistGradientBoostingClassifier
    model.save("checkpoints/gbt")                          # safetensors + JSON; nothing is pickled
    GbtExtractor("checkpoints/gbt").extract(html)          # NumPy-only inference

Inputs per block (`gbt_features`), all computed without a neural network:
  1. features.block_features of the block (FEATURE_NAMES: DOM facts, text statistics, place in the page);
  2. the same row for the `neighbours` blocks before and after it (NaN past the page's ends): a cheap
     stand-in for the Transformer's page context;
  3. `tag_buckets` 0/1 indicators of its tag-path tokens (features.tag_path_tokens hashed by CRC-32): the
     neural model's tag-path input without the embedding;
  4. with `containers` = K > 0, what the page holds under the block's own tag path and under its ancestor
     paths 1..K levels up (`container_features`): the share of the page's text, the text-weighted link
     density, and the number of blocks there. Blocks whose paths match share a container, so the paragraphs
     of an article body (`.../div.article/p`) are seen together, as readability scores a parent node.
The block text enters only through the text statistics of (1); hashed n-grams need a learned embedding.
Training: early stopping on validation log-loss, then the P(body) threshold tuned on validation exactly as
train.tune_threshold does for the neural model.
Persistence: the fitted trees are flattened into node arrays (feature, threshold, children, NaN direction,
leaf value) in model.safetensors, with the baseline log-odds and the settings in config.json. Loading never
unpickles. Prediction hands the node arrays to scikit-learn's compiled tree walk when it is installed (and
agrees with ours), else walks all trees at once in NumPy: inference does not need scikit-learn.
"""

from __future__ import annotations

import functools
import json
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.cache import CachedPage
from bodyblocks.config import DataConfig
from bodyblocks.features import FEATURE_NAMES, block_features, tag_bags
from bodyblocks.types import Block, Document, Extraction

FORMAT_VERSION = 1  # of the checkpoint folder (config.json + model.safetensors); bump on layout changes
REPO_CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "gbt"
_TREE_ARRAYS = ("feature", "threshold", "left", "right", "nan_left", "value", "roots")
_CHUNK = 2048  # rows walked through the trees at once: (rows x trees) index arrays stay a few MB


@dataclass
class GbtConfig:
    """Inputs and boosting settings; stored in the checkpoint, so it alone rebuilds the features."""

    tag_buckets: int = 128  # 0/1 indicators of hashed tag-path tokens
    neighbours: int = 1  # block_features of this many blocks before and after (0: the block alone)
    max_iter: int = 400  # boosting iterations (upper bound; early stopping usually ends sooner)
    learning_rate: float = 0.1  # shrinkage (already folded into the stored leaf values)
    max_leaf_nodes: int = 31  # leaves per tree
    min_samples_leaf: int = 40  # blocks per leaf at least
    l2_regularization: float = 1.0  # on leaf values
    n_iter_no_change: int = 20  # early-stopping patience on validation loss (0: run all max_iter)
    seed: int = 0  # random state of scikit-learn
    containers: int = 0  # ancestor levels of container_features (0: none; checkpoints before it had none)

    def __post_init__(self) -> None:
        if self.tag_buckets < 0 or self.neighbours < 0 or self.containers < 0:
            raise ValueError("gbt: tag_buckets, neighbours and containers must be >= 0")
        if self.max_iter < 1 or self.max_leaf_nodes < 2 or self.min_samples_leaf < 1:
            raise ValueError("gbt: max_iter >= 1, max_leaf_nodes >= 2 and min_samples_leaf >= 1 are required")
        if not 0 < self.learning_rate <= 1 or self.l2_regularization < 0 or self.n_iter_no_change < 0:
            raise ValueError("gbt: learning_rate in (0, 1], l2_regularization >= 0, n_iter_no_change >= 0")


# ----------------------------------------------------------------------------------------- features
def feature_names(cfg: GbtConfig) -> list[str]:
    """Column names of gbt_features, in order."""
    names = list(FEATURE_NAMES)
    for k in range(1, cfg.neighbours + 1):
        names += [f"prev{k}:{n}" for n in FEATURE_NAMES] + [f"next{k}:{n}" for n in FEATURE_NAMES]
    names += [f"up{k}:{n}" for k in range(cfg.containers + 1) if cfg.containers for n in CONTAINER_NAMES]
    return names + [f"tag{j}" for j in range(cfg.tag_buckets)]


CONTAINER_NAMES = ("text_share", "link_density", "log_blocks")


def container_features(blocks: Sequence[Block], levels: int) -> np.ndarray:
    """(n, (levels + 1) * 3): for the element at the block's tag path (level 0) and at its ancestor paths
    1..levels up, what lies under it (every block whose path starts with that path): the share of the
    page's characters, their text-weighted link density, and log1p(number of blocks) / 5. Elements with
    equal paths (siblings of one kind) count as one. Above the root, the whole page."""
    n = len(blocks)
    width = len(CONTAINER_NAMES)
    out = np.zeros((n, (levels + 1) * width))
    if not n:
        return out
    chars = np.array([max(b.text_len, 0) for b in blocks], dtype=np.float64)
    links = chars * np.array([min(max(b.link_density, 0.0), 1.0) for b in blocks])
    path_of: dict[str, int] = {}
    ids = np.fromiter((path_of.setdefault(b.tag_path, len(path_of)) for b in blocks), np.int64, n)
    p_chars, p_links = np.bincount(ids, chars, len(path_of)), np.bincount(ids, links, len(path_of))
    p_count = np.bincount(ids, minlength=len(path_of)).astype(np.float64)
    under: dict[str, np.ndarray] = {}  # prefix path -> (chars, links, blocks) of every block below it
    prefixes = []
    for j, path in enumerate(path_of):
        segs = path.split("/")
        mine = ["/".join(segs[: i + 1]) for i in range(len(segs))]
        prefixes.append(mine)
        row = np.array((p_chars[j], p_links[j], p_count[j]))
        for key in mine:
            acc = under.get(key)
            if acc is None:
                under[key] = row.copy()
            else:
                acc += row
    page = np.array((chars.sum(), links.sum(), float(n)))
    table = np.empty((len(path_of), levels + 1, 3))
    for j, mine in enumerate(prefixes):
        for k in range(levels + 1):
            table[j, k] = under[mine[-1 - k]] if k < len(mine) else page
    sums = table[ids]  # (n, levels + 1, 3)
    total = max(page[0], 1.0)
    out[:, 0::width] = sums[:, :, 0] / total
    out[:, 1::width] = sums[:, :, 1] / np.maximum(sums[:, :, 0], 1.0)
    out[:, 2::width] = np.log1p(sums[:, :, 2]) / 5
    return out


def gbt_features(blocks: Sequence[Block], cfg: GbtConfig, base: np.ndarray | None = None,
                 tags: tuple[np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
    """(n, len(feature_names(cfg))) float64 inputs of one page's blocks (module docstring).

    What the caller has computed already (the ensemble's model) is not computed again: `base`, the page's
    block_features; `tags`, its tag_bags (ids, offsets) for a bucket count that is a multiple of
    cfg.tag_buckets (CRC-32 mod k*b mod b is CRC-32 mod b: the same ids).
    """
    base = (block_features(blocks) if base is None else base).astype(np.float64)  # (n, F)
    n, f = base.shape
    parts = [base]
    for k in range(1, cfg.neighbours + 1):
        pad = np.full((k, f), np.nan)
        parts.append(np.concatenate((pad, base[:-k] if k < n else base[:0]))[:n])  # block i - k
        parts.append(np.concatenate((base[k:], pad))[:n])  # block i + k
    indicators = np.zeros((n, cfg.tag_buckets))
    if cfg.tag_buckets and n:
        if tags is not None and tags[2] % cfg.tag_buckets == 0:
            ids, offsets = tags[0] % cfg.tag_buckets, tags[1]
        else:
            ids, offsets = tag_bags(blocks, cfg.tag_buckets)
        rows = np.repeat(np.arange(n), np.diff(np.append(offsets, len(ids))))
        indicators[rows, ids] = 1.0
    if cfg.containers:
        parts.append(container_features(blocks, cfg.containers))
    return np.concatenate([*parts, indicators], axis=1)


def page_matrix(pages: Sequence[CachedPage], cfg: GbtConfig) -> tuple[np.ndarray, np.ndarray]:
    """Stacked features and labels of all blocks of `pages`."""
    x = [gbt_features(cp.blocks, cfg) for cp in pages]
    y = [np.asarray(cp.labels, dtype=np.int64) for cp in pages]
    width = len(feature_names(cfg))
    return (np.concatenate(x) if x else np.zeros((0, width))), (np.concatenate(y) if y else np.zeros(0, np.int64))


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

    @classmethod
    def from_sklearn(cls, clf: Any, cfg: GbtConfig, **kwargs: Any) -> GbtModel:
        """Flatten a fitted binary HistGradientBoostingClassifier (numeric features only)."""
        if list(clf.classes_) != [0, 1]:
            raise ValueError(f"expected classes [0, 1], got {list(clf.classes_)}")
        nodes = [it[0].nodes for it in clf._predictors]  # binary: one tree per iteration
        flat = np.concatenate(nodes)
        if flat["is_categorical"].any():
            raise ValueError("categorical splits are not supported")
        sizes = np.array([len(n) for n in nodes])
        roots = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        shift = np.repeat(roots, sizes)
        leaf = flat["is_leaf"].astype(bool)
        own = np.arange(len(flat))
        trees = {
            "feature": np.where(leaf, 0, flat["feature_idx"]).astype(np.int32),
            "threshold": np.where(leaf, np.inf, flat["num_threshold"]).astype(np.float64),
            "left": np.where(leaf, own, flat["left"].astype(np.int64) + shift).astype(np.int32),
            "right": np.where(leaf, own, flat["right"].astype(np.int64) + shift).astype(np.int32),
            "nan_left": flat["missing_go_to_left"].astype(np.uint8),
            "value": flat["value"].astype(np.float64),
            "roots": roots.astype(np.int32),
        }
        baseline = float(np.ravel(clf._baseline_prediction)[0])
        return cls(cfg, trees, baseline, int(flat["depth"].max()), **kwargs)

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.trees["roots"])

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Log-odds of body for rows of gbt_features: baseline + the leaf value of every tree.

        scikit-learn's compiled tree walk when it is installed and agrees with the NumPy walk on this model
        (checked once, on rows with missing values: it is a private API), else the NumPy walk.
        """
        x = np.ascontiguousarray(x, dtype=np.float64)
        compiled = self._compiled
        if compiled is not None and len(x):
            return compiled(x)
        return self._numpy_raw(x)

    def prepare_walk(self) -> bool:
        """Build the compiled walk now (importing scikit-learn takes about 1.5 s), not on the first page;
        True when it is in use. Extractors call it when they load."""
        return self._compiled is not None

    def _numpy_raw(self, x: np.ndarray) -> np.ndarray:
        out = np.full(len(x), self.baseline)
        for start in range(0, len(x), _CHUNK):
            out[start : start + _CHUNK] += self._leaf_values(x[start : start + _CHUNK]).sum(axis=1)
        return out

    @functools.cached_property
    def _compiled(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """The trees as scikit-learn predictor nodes, walked by its Cython code (about half the NumPy walk's
        time on a page); None when scikit-learn is absent or its walk disagrees with ours."""
        try:
            from sklearn.ensemble._hist_gradient_boosting._predictor import _predict_from_raw_data
            from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE
        except ImportError:
            return None
        t, width = self.trees, len(feature_names(self.cfg))
        bounds = [*self.trees["roots"].tolist(), len(t["value"])]
        trees = []
        try:
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                nodes = np.zeros(b - a, dtype=PREDICTOR_RECORD_DTYPE)
                leaf = t["left"][a:b] == np.arange(a, b)
                nodes["value"], nodes["feature_idx"] = t["value"][a:b], t["feature"][a:b]
                nodes["num_threshold"], nodes["missing_go_to_left"] = t["threshold"][a:b], t["nan_left"][a:b]
                nodes["left"] = np.where(leaf, 0, t["left"][a:b] - a)
                nodes["right"] = np.where(leaf, 0, t["right"][a:b] - a)
                nodes["is_leaf"] = leaf
                trees.append(nodes)
            no_cats, no_map = np.zeros((0, 8), np.uint32), np.zeros(width, np.uint32)

            def walk(x: np.ndarray) -> np.ndarray:
                out, leaf_values = np.full(len(x), self.baseline), np.empty(len(x))
                for nodes in trees:
                    _predict_from_raw_data(nodes, x, no_cats, no_cats, no_map, 1, leaf_values)
                    out += leaf_values
                return out

            probe = np.random.default_rng(0).normal(size=(64, width)) * 2
            probe[np.random.default_rng(1).random(probe.shape) < 0.1] = np.nan
            if np.allclose(walk(probe), self._numpy_raw(probe), rtol=0, atol=1e-9):
                return walk
        except (TypeError, ValueError):  # a scikit-learn whose private predictor changed shape
            pass
        return None

    @functools.cached_property
    def _walk_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """feature, threshold, nan-goes-right, children (node * 2 + went_right) and is-leaf, for _leaf_values."""
        t = self.trees
        own = np.arange(len(t["value"]))
        kids = np.stack((t["left"], t["right"]), axis=1).astype(np.intp).ravel()
        return (t["feature"].astype(np.intp), t["threshold"], t["nan_left"] == 0, kids, t["left"] == own)

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
        p = self.predict_proba(np.concatenate(rows)).astype(np.float32) if rows else np.zeros(0, np.float32)
        return np.split(p, np.cumsum([len(blocks) for blocks, _, _ in pages])[:-1])

    # ------------------------------------------------------------------------------------- checkpoints
    def save(self, directory: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write model.safetensors (node arrays) and config.json (settings, baseline, threshold) atomically."""
        from safetensors.numpy import save_file

        from bodyblocks import __version__

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        arrays = {k: np.ascontiguousarray(self.trees[k]) for k in _TREE_ARRAYS}
        save_file(arrays, str(out / "model.safetensors.tmp"), metadata={"format_version": str(FORMAT_VERSION)})
        meta = {
            "format_version": FORMAT_VERSION, "kind": "gbt", "bodyblocks_version": __version__,
            "gbt": asdict(self.cfg), "baseline": self.baseline, "depth": self.depth, "n_trees": self.n_trees,
            "threshold": self.threshold, "confident": self.confident, "rescue": self.rescue, "metrics": self.metrics,
            "feature_names": feature_names(self.cfg), **(extra or {}),
        }
        (out / "config.json.tmp").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        os.replace(out / "model.safetensors.tmp", out / "model.safetensors")
        os.replace(out / "config.json.tmp", out / "config.json")
        return out

    @classmethod
    def load(cls, directory: str | Path) -> GbtModel:
        """Read a folder written by `save` (safetensors and JSON only)."""
        from safetensors.numpy import load_file

        path = Path(directory)
        meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != "gbt":
            raise ValueError(f"{path}: not a gbt checkpoint of format {FORMAT_VERSION}")
        cfg = GbtConfig(**meta["gbt"])
        trees = load_file(str(path / "model.safetensors"))
        missing = set(_TREE_ARRAYS) - set(trees)
        if missing:
            raise ValueError(f"{path}: model.safetensors lacks {sorted(missing)}")
        n, width = len(trees["value"]), len(feature_names(cfg))
        links = np.concatenate((trees["left"], trees["right"], trees["roots"])).astype(np.int64)
        bad_links = links.size > 0 and (links.min() < 0 or links.max() >= n)
        if bad_links or np.any(trees["feature"] >= width) or np.any(trees["feature"] < 0):
            raise ValueError(f"{path}: tree arrays point outside the nodes or the {width} features")
        return cls(cfg, trees, float(meta["baseline"]), int(meta["depth"]), float(meta["threshold"]),
                   float(meta["confident"]), None if meta.get("rescue") is None else float(meta["rescue"]),
                   meta.get("metrics", {}))


# ----------------------------------------------------------------------------------------- training
def _holdout(pages: Sequence[CachedPage]) -> tuple[list[CachedPage], list[CachedPage]]:
    """(train, val): one site in ten (by CRC-32 of the site) is held out for validation."""
    val = [cp for cp in pages if zlib.crc32(cp.site.encode("utf-8")) % 10 == 1]
    train = [cp for cp in pages if zlib.crc32(cp.site.encode("utf-8")) % 10 != 1]
    return train, val


def fit_sklearn(x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, cfg: GbtConfig,
                weights: np.ndarray | None = None, val_weights: np.ndarray | None = None) -> Any:
    """A HistGradientBoostingClassifier fitted on (x, y), early-stopped on (x_val, y_val); `weights` and
    `val_weights`: per-block sample weights (None: every block counts once)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(
        learning_rate=cfg.learning_rate, max_iter=cfg.max_iter, max_leaf_nodes=cfg.max_leaf_nodes,
        min_samples_leaf=cfg.min_samples_leaf, l2_regularization=cfg.l2_regularization,
        early_stopping=cfg.n_iter_no_change > 0, n_iter_no_change=max(cfg.n_iter_no_change, 1),
        scoring="loss", random_state=cfg.seed,
    )
    if cfg.n_iter_no_change > 0:
        return clf.fit(x, y, sample_weight=weights, X_val=x_val, y_val=y_val, sample_weight_val=val_weights)
    return clf.fit(x, y, sample_weight=weights)


def train_gbt(pages: list[CachedPage], val_pages: list[CachedPage] | None = None,
              cfg: GbtConfig | None = None) -> GbtModel:
    """Fit boosted trees on the blocks of `pages` and tune the threshold on validation.

    Args:
        pages: labelled training pages (train.load_pages(...)["train"]).
        val_pages: validation pages for early stopping and the threshold; None: one site in ten of `pages`.
        cfg: inputs and boosting settings; None: GbtConfig().
    Returns:
        The fitted model (NumPy node arrays), with threshold, confident and validation metrics set.
    """
    from bodyblocks.train import tune_decision, tune_threshold

    cfg = cfg or GbtConfig()
    if val_pages is None:
        pages, val_pages = _holdout(pages)
    if not pages or not val_pages:
        raise ValueError(f"need training and validation pages, got {len(pages)} and {len(val_pages)}")
    x, y = page_matrix(pages, cfg)
    x_val, y_val = page_matrix(val_pages, cfg)
    if len(np.unique(y)) < 2:
        raise ValueError("training blocks must include body and non-body blocks")
    model = GbtModel.from_sklearn(fit_sklearn(x, y, x_val, y_val, cfg), cfg)
    p = model.predict_proba(x_val)
    probs = np.split(p, np.cumsum([len(cp.blocks) for cp in val_pages])[:-1])
    _, f1 = tune_threshold(val_pages, probs)
    model.threshold, model.rescue, page_f1 = tune_decision(val_pages, probs)
    model.confident = max(model.threshold, 0.5)
    eps = 1e-12
    loss = -float(np.mean(y_val * np.log(p + eps) + (1 - y_val) * np.log(1 - p + eps)))
    model.metrics = {"val_loss": loss, "val_char_f1": f1, "val_page_f1": page_f1, "threshold": model.threshold,
                     "rescue": model.rescue, "n_trees": model.n_trees,
                     "train_pages": len(pages), "train_blocks": int(len(y)), "val_pages": len(val_pages)}
    return model


def train_and_save(data: DataConfig, out: str | Path, cfg: GbtConfig | None = None) -> dict[str, Any]:
    """Train on the train split of `data` (validation: its val split), save to `out`; returns the metrics."""
    from bodyblocks.config import to_dict
    from bodyblocks.train import load_pages

    splits = load_pages(data)
    model = train_gbt(splits["train"], splits["val"] or None, cfg)
    model.save(out, extra={"data": {"config": to_dict(data), "pages": {k: len(v) for k, v in splits.items()}}})
    return model.metrics


# ----------------------------------------------------------------------------------------- extractor
def shipped_gbt() -> Path | None:
    """checkpoints/gbt beside the source tree, when it holds a model."""
    return REPO_CHECKPOINT if (REPO_CHECKPOINT / "model.safetensors").exists() else None


class GbtExtractor:
    """The boosted-tree baseline behind the Extractor interface (same decision rule as the model)."""

    name = "gbt"

    def __init__(self, checkpoint: str | Path | None = None, *, threshold: float | None = None,
                 confident: float | None = None, rescue: float | None = None) -> None:
        """
        Args:
            checkpoint: folder with config.json + model.safetensors; None: the shipped checkpoints/gbt.
            threshold: P(body) at which a block is kept; None: the checkpoint's tuned value.
            confident: a page is low-confidence when no block reaches this; None: the checkpoint's value.
            rescue: on a page with no block at the threshold, keep those at or above this; None: the
                checkpoint's value when the threshold is the checkpoint's too, else no rescue.
        """
        path = Path(checkpoint) if checkpoint else shipped_gbt()
        if path is None:
            raise FileNotFoundError("no shipped gbt model in checkpoints/gbt; pass checkpoint= or train one")
        from bodyblocks.predict import decision_rule

        self.model = GbtModel.load(path)
        self.model.prepare_walk()
        m = self.model
        self.threshold, self.confident, self.rescue = decision_rule(
            m.threshold, m.confident, m.rescue, threshold, confident, rescue)

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Segment and classify one page."""
        from bodyblocks.segment import segment

        return self.extract_documents([segment(html)])[0]

    def extract_documents(self, docs: Sequence[Document],
                          sources: Sequence[Callable[[], str | bytes]] | None = None) -> list[Extraction]:
        """Classify segmented pages; `sources` is accepted for interface parity (there is no fallback)."""
        return [self.decide(doc, self.model.page_probabilities(doc.blocks)) for doc in docs]

    def decide(self, doc: Document, probs: np.ndarray) -> Extraction:
        """Keep blocks at or above the threshold; flag pages with no confident block (predict.decide_blocks)."""
        from bodyblocks.predict import decide_blocks

        return decide_blocks(doc, probs, self.threshold, self.confident, self.name, self.rescue)
