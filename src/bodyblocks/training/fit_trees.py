"""Training the boosted trees: scikit-learn's HistGradientBoostingClassifier on gbt_features, flattened.

    model = train_gbt(splits["train"], splits["val"], GbtConfig())
    model.save("checkpoints/gbt")                      # classify/trees.py reads it without scikit-learn

Early stopping on validation log-loss, then the decision rule tuned on validation exactly as for the
neural model (tune.tune_rule).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.classify.trees import GbtModel, feature_names, gbt_features
from bodyblocks.config import DataConfig, GbtConfig, to_dict
from bodyblocks.page.features import tag_path_tokens
from bodyblocks.training.cache import CachedPage, made_with
from bodyblocks.training.data import load_pages
from bodyblocks.training.tune import pooled_char_f1, tune_decision


def page_matrix(pages: Sequence[CachedPage], cfg: GbtConfig) -> tuple[np.ndarray, np.ndarray]:
    """Stacked features and labels of all blocks of `pages`."""
    x = [gbt_features(cp.blocks, cfg) for cp in pages]
    y = [np.asarray(cp.labels, dtype=np.int64) for cp in pages]
    width = len(feature_names(cfg))
    return (np.concatenate(x) if x else np.zeros((0, width))), (np.concatenate(y) if y else np.zeros(0, np.int64))


def site_vocabulary(pages: Sequence[CachedPage], size: int, min_sites: int) -> list[str]:
    """The `size` tag-path tokens (features.tag_path_tokens) found on the most sites of `pages`, each on at least
    `min_sites` of them; ties by token. A token only one site's pages use (its own class names) says nothing
    about a site the trees have not seen, one that many sites use ("comment", "article") may."""
    sites: dict[str, set[str]] = {}
    tokens: dict[str, tuple[str, ...]] = {}
    for cp in pages:
        for path in {b.tag_path for b in cp.blocks}:
            toks = tokens.get(path)
            if toks is None:
                toks = tokens[path] = tag_path_tokens(path)
            for t in toks:
                sites.setdefault(t, set()).add(cp.site)
    ranked = sorted(((len(s), t) for t, s in sites.items() if len(s) >= min_sites), key=lambda x: (-x[0], x[1]))
    return [t for _, t in ranked[:size]]


def with_vocabulary(pages: Sequence[CachedPage], cfg: GbtConfig) -> GbtConfig:
    """`cfg` with its token vocabulary learned from `pages` when it asks for one and has none yet (trees
    trained again from a checkpoint, as bodyblocks finetune does, keep that checkpoint's vocabulary)."""
    if not cfg.tag_vocab or cfg.tokens:
        return cfg
    return dataclasses.replace(cfg, tokens=site_vocabulary(pages, cfg.tag_vocab, cfg.vocab_sites))


def flatten_trees(nodes: Sequence[np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """scikit-learn's fitted tree node arrays (TreePredictor.nodes, numeric splits only) as one forest of flat node
    arrays (classify/trees.py's _TREE_ARRAYS, leaves pointing to themselves) and its depth."""
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
    return trees, int(flat["depth"].max())


def from_sklearn(clf: Any, cfg: GbtConfig, **kwargs: Any) -> GbtModel:
    """Flatten a fitted binary HistGradientBoostingClassifier (numeric features only)."""
    if list(clf.classes_) != [0, 1]:
        raise ValueError(f"expected classes [0, 1], got {list(clf.classes_)}")
    trees, depth = flatten_trees([it[0].nodes for it in clf._predictors])  # binary: one tree per iteration
    baseline = float(np.ravel(clf._baseline_prediction)[0])
    return GbtModel(cfg, trees, baseline, depth, **kwargs)


def _holdout(pages: Sequence[CachedPage]) -> tuple[list[CachedPage], list[CachedPage]]:
    """(train, val): one site in ten (by CRC-32 of the site) is held out for validation."""
    val = [cp for cp in pages if zlib.crc32(cp.site.encode("utf-8")) % 10 == 1]
    train = [cp for cp in pages if zlib.crc32(cp.site.encode("utf-8")) % 10 != 1]
    return train, val


def fit_sklearn(x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, cfg: GbtConfig) -> Any:
    """A HistGradientBoostingClassifier fitted on (x, y), early-stopped on (x_val, y_val)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(
        learning_rate=cfg.learning_rate, max_iter=cfg.max_iter, max_leaf_nodes=cfg.max_leaf_nodes,
        min_samples_leaf=cfg.min_samples_leaf, l2_regularization=cfg.l2_regularization,
        early_stopping=cfg.n_iter_no_change > 0, n_iter_no_change=max(cfg.n_iter_no_change, 1),
        scoring="loss", random_state=cfg.seed,
    )
    if cfg.n_iter_no_change > 0:
        return clf.fit(x, y, X_val=x_val, y_val=y_val)
    return clf.fit(x, y)


def train_gbt(pages: list[CachedPage], val_pages: list[CachedPage] | None = None,
              cfg: GbtConfig | None = None) -> GbtModel:
    """Fit boosted trees on the blocks of `pages` and tune the threshold on validation.

    Args:
        pages: labelled training pages (data.load_pages(...)["train"]).
        val_pages: validation pages for early stopping and the threshold; None: one site in ten of `pages`.
        cfg: inputs and boosting settings; None: GbtConfig().
    Returns:
        The fitted model (NumPy node arrays), with threshold, confident and validation metrics set.
    """
    cfg = cfg or GbtConfig()
    if val_pages is None:
        pages, val_pages = _holdout(pages)
    if not pages or not val_pages:
        raise ValueError(f"need training and validation pages, got {len(pages)} and {len(val_pages)}")
    cfg = with_vocabulary(pages, cfg)
    x, y = page_matrix(pages, cfg)
    x_val, y_val = page_matrix(val_pages, cfg)
    if len(np.unique(y)) < 2:
        raise ValueError("training blocks must include body and non-body blocks")
    model = from_sklearn(fit_sklearn(x, y, x_val, y_val, cfg), cfg)
    p = model.predict_proba(x_val)
    probs = np.split(p, np.cumsum([len(cp.blocks) for cp in val_pages])[:-1])
    _, f1 = pooled_char_f1(val_pages, probs)
    rule = tune_decision(val_pages, probs)
    model.threshold, model.rescue, model.container = rule["threshold"], rule["rescue"], rule["container"]
    page_f1 = rule["val_page_f1"]
    model.confident = max(model.threshold, 0.5)
    eps = 1e-12
    loss = -float(np.mean(y_val * np.log(p + eps) + (1 - y_val) * np.log(1 - p + eps)))
    model.metrics = {"val_loss": loss, "val_char_f1": f1, "val_page_f1": page_f1, "threshold": model.threshold,
                     "rescue": model.rescue, "container": model.container, "n_trees": model.n_trees,
                     "train_pages": len(pages), "train_blocks": int(len(y)), "val_pages": len(val_pages)}
    return model


def train_and_save(data: DataConfig, out: str | Path, cfg: GbtConfig | None = None) -> dict[str, Any]:
    """Train on the train split of `data` (validation: its val split), save to `out`; returns the metrics."""
    splits = load_pages(data)
    model = train_gbt(splits["train"], splits["val"] or None, cfg)
    model.save(out, extra={"data": {"config": to_dict(data), "pages": {k: len(v) for k, v in splits.items()}},
                           "made_with": made_with()})
    return model.metrics
