"""The block Transformer and the boosted trees together: P(body) = w * P_model + (1 - w) * P_gbt per block.

    make_ensemble("checkpoints/default", "checkpoints/gbt", "checkpoints/ensemble")  # tunes w and the rule
    EnsembleExtractor().extract(html)                                                # as ModelExtractor

The two learners see the same blocks differently: the Transformer reads the block text (hashed n-grams)
and the whole page's sequence; the trees read the DOM statistics of a block and of its two neighbours.
Their errors differ, so their average is better than either (docs/EVALUATION.md has the figures).

The folder holds config.json only: the two parts as paths relative to it, the weight w and the decision
rule (threshold, rescue, confident: the same rule as predict.decide_blocks), all tuned together on the
validation pages for the best mean per-page character F1 (`bodyblocks tune FOLDER` re-tunes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.config import DataConfig
from bodyblocks.predict import ModelExtractor, Prepared, decision_rule
from bodyblocks.types import Document

KIND = "ensemble"
FORMAT_VERSION = 1
REPO_ENSEMBLE = Path(__file__).resolve().parents[2] / "checkpoints" / "ensemble"
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))  # w of the model; 0 is the trees alone, 1 the model alone


def read_ensemble(folder: str | Path) -> dict[str, Any]:
    """config.json of an ensemble folder, with `model_path` and `gbt_path` resolved against the folder."""
    path = Path(folder)
    meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if meta.get("kind") != KIND or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: not an ensemble folder of format {FORMAT_VERSION}")
    meta["model_path"], meta["gbt_path"] = path / meta["model"], path / meta["gbt"]
    return meta


def shipped_ensemble() -> Path | None:
    """checkpoints/ensemble beside the source tree, when it and both of its parts are there."""
    try:
        meta = read_ensemble(REPO_ENSEMBLE)
    except (OSError, ValueError, KeyError):
        return None
    parts = (meta["model_path"] / "model.safetensors", meta["gbt_path"] / "model.safetensors")
    return REPO_ENSEMBLE if all(p.exists() for p in parts) else None


def blend(model: Sequence[np.ndarray], gbt: Sequence[np.ndarray], weight: float) -> list[np.ndarray]:
    """Per page, weight * model + (1 - weight) * gbt (float32)."""
    return [(weight * a + (1.0 - weight) * b).astype(np.float32) for a, b in zip(model, gbt, strict=True)]


def tune_ensemble(folder: str | Path, data: DataConfig | None = None) -> dict[str, Any]:
    """Choose the weight and the decision rule on the validation pages; rewrites FOLDER/config.json.

    `data` picks the pages; None: the data config recorded in the model checkpoint (else all datasets).
    Returns the chosen settings with the validation per-page F1 of the ensemble and of each part alone.
    """
    from bodyblocks.gbt import GbtModel
    from bodyblocks.model import read_checkpoint
    from bodyblocks.train import load_pages, recorded_data, tune_decision

    path = Path(folder)
    meta = read_ensemble(path)
    if data is None:
        data = recorded_data(read_checkpoint(meta["model_path"]))
    val = load_pages(data)["val"]
    if not val:
        raise ValueError("no validation pages to tune on")
    docs = [Document(cp.blocks) for cp in val]
    p_model = ModelExtractor(meta["model_path"], device="cpu", threads=None).probabilities(docs)
    gbt = GbtModel.load(meta["gbt_path"])
    p_gbt = [gbt.page_probabilities(cp.blocks) for cp in val]
    scores = {w: tune_decision(val, blend(p_model, p_gbt, w)) for w in WEIGHTS}
    weight = max(WEIGHTS, key=lambda w: (scores[w][2], -abs(w - 0.5)))  # ties: the more even blend
    threshold, rescue, score = scores[weight]
    meta.update(weight=weight, threshold=threshold, rescue=rescue, confident=max(threshold, 0.5))
    meta["metrics"] = {"val_page_f1": score, "val_pages": len(val), "model_alone": scores[1.0][2],
                       "gbt_alone": scores[0.0][2], "by_weight": {str(w): s[2] for w, s in scores.items()}}
    for key in ("model_path", "gbt_path"):
        del meta[key]
    tmp = path / "config.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path / "config.json")
    return {"weight": weight, "threshold": threshold, "rescue": rescue, **meta["metrics"]}


def make_ensemble(model: str | Path, gbt: str | Path, out: str | Path,
                  data: DataConfig | None = None) -> dict[str, Any]:
    """Write an ensemble folder OUT pointing at the MODEL and GBT checkpoints, then tune it."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for part, name in ((Path(model), "model"), (Path(gbt), "gbt")):
        if not (part / "model.safetensors").exists():
            raise FileNotFoundError(f"{part}: no {name} checkpoint (model.safetensors) there")
    meta = {"format_version": FORMAT_VERSION, "kind": KIND,
            "model": os.path.relpath(Path(model).resolve(), folder.resolve()),
            "gbt": os.path.relpath(Path(gbt).resolve(), folder.resolve()),
            "weight": 0.5, "threshold": 0.5, "rescue": None, "confident": 0.5}
    (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return tune_ensemble(folder, data)


class EnsembleExtractor(ModelExtractor):
    """ModelExtractor whose P(body) is blended with the boosted trees' (same API, rule and options)."""

    name = "ensemble"

    def __init__(self, checkpoint: str | Path | None = None, *, threshold: float | None = None,
                 confident: float | None = None, rescue: float | None = None, **opts: Any) -> None:
        """
        Args:
            checkpoint: an ensemble folder; None: the shipped checkpoints/ensemble.
            threshold, confident, rescue: as ModelExtractor, defaulting to the ensemble's tuned values.
            opts: the rest of ModelExtractor's options (device, fallback, batch_size, threads).
        """
        from bodyblocks.gbt import GbtModel

        folder = Path(checkpoint) if checkpoint else shipped_ensemble()
        if folder is None:
            raise FileNotFoundError("no shipped ensemble in checkpoints/ensemble; pass checkpoint= or make one")
        meta = read_ensemble(folder)
        super().__init__(meta["model_path"], threshold=threshold, confident=confident, rescue=rescue, **opts)
        self.gbt = GbtModel.load(meta["gbt_path"])
        self.gbt.prepare_walk()
        self.weight = float(meta["weight"])
        self.threshold, self.confident, self.rescue = decision_rule(
            meta["threshold"], meta.get("confident"), meta.get("rescue"), threshold, confident, rescue)

    def prepare(self, docs: Sequence[Document]) -> Prepared:
        """The model's inputs, and the trees' P(body) of every page: the trees start from the same block
        features and tag-path ids (gbt.gbt_features), so those are computed once."""
        prepared = super().prepare(docs)
        tags_of = self.cfg.tag_buckets if self.cfg.use_tag_path else None
        order, inputs = [], []
        for idx, pages in prepared.batches:
            for i, page in zip(idx, pages or [None] * len(idx), strict=True):
                base = tags = None
                if page is not None:
                    base = page.features
                    tags = (page.tag_ids, page.tag_offsets, tags_of) if tags_of else None
                order.append(i)
                inputs.append((docs[i].blocks, base, tags))
        for i, p in zip(order, self.gbt.pages_probabilities(inputs), strict=True):  # all pages' trees at once
            prepared.extra[i] = p
        return prepared

    def combine(self, prepared: Prepared, probs: list[np.ndarray]) -> list[np.ndarray]:
        """w * model + (1 - w) * trees, per block."""
        empty = np.zeros(0, np.float32)
        return blend(probs, [prepared.extra.get(i, empty) for i in range(len(probs))], self.weight)
