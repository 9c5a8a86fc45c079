"""Checkpoint folders by kind, the shipped ones, and the one loader that builds a block extractor from them.

    load_extractor("ensemble")                               # the shipped checkpoints/ensemble
    load_extractor("gbt", "runs/gbt", threshold=0.4)         # a folder of one's own, a hand-set threshold

Kinds (config.json "kind"; folders written before it was recorded are models):
  model     config.json + model.safetensors: the block Transformer (inference/model.py)
  gbt       config.json + model.safetensors: the boosted trees (inference/gbt.py)
  ensemble  config.json only: the two parts as paths relative to the folder, the blend's weights (`weight`:
            the model's, `heuristic`: the vote's; the trees get the rest) and the decision rule, all tuned
            together on validation (training/tune.py); `without_vote` holds the blend and rule tuned
            without the heuristic's vote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bodyblocks.files import REPO_ROOT
from bodyblocks.inference.blocks import Blend, BlockExtractor
from bodyblocks.inference.decision import DecisionRule
from bodyblocks.inference.gbt import KIND as GBT
from bodyblocks.inference.gbt import GbtModel, GbtScorer

MODEL, ENSEMBLE = "model", "ensemble"
KINDS = (MODEL, GBT, ENSEMBLE)
ENSEMBLE_FORMAT = 1  # of an ensemble folder's config.json
SHIPPED = REPO_ROOT / "checkpoints"
SHIPPED_FOLDERS = {MODEL: "default", GBT: "gbt", ENSEMBLE: "ensemble"}
ENV_CHECKPOINT = "BODYBLOCKS_CHECKPOINT"  # a model folder to use in place of the shipped one


def read_meta(folder: str | Path) -> dict[str, Any]:
    """A checkpoint folder's config.json."""
    return json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))


def kind_of(folder: str | Path, meta: dict[str, Any] | None = None) -> str:
    """The kind of a checkpoint folder (module docstring); `meta`: its config.json, when read already."""
    kind = (read_meta(folder) if meta is None else meta).get("kind", MODEL)
    if kind not in KINDS:
        raise ValueError(f"{folder}: unknown checkpoint kind {kind!r}")
    return str(kind)


def read_ensemble(folder: str | Path) -> dict[str, Any]:
    """config.json of an ensemble folder, with `model_path` and `gbt_path` resolved against the folder."""
    path = Path(folder)
    meta = read_meta(path)
    if meta.get("kind") != ENSEMBLE or meta.get("format_version") != ENSEMBLE_FORMAT:
        raise ValueError(f"{path}: not an ensemble folder of format {ENSEMBLE_FORMAT}")
    meta["model_path"], meta["gbt_path"] = path / meta["model"], path / meta["gbt"]
    return meta


def shipped(kind: str) -> Path | None:
    """The shipped folder of a kind when it is complete (an ensemble: with both of its parts); a model:
    $BODYBLOCKS_CHECKPOINT when set."""
    env = os.environ.get(ENV_CHECKPOINT)
    folder = Path(env) if kind == MODEL and env else SHIPPED / SHIPPED_FOLDERS[kind]
    if kind != ENSEMBLE:
        return folder if (folder / "model.safetensors").exists() else None
    try:
        meta = read_ensemble(folder)
    except (OSError, ValueError, KeyError):
        return None
    parts = (meta["model_path"] / "model.safetensors", meta["gbt_path"] / "model.safetensors")
    return folder if all(p.exists() for p in parts) else None


def ensemble_settings(folder: str | Path, vote: bool = True) -> dict[str, Any]:
    """An ensemble folder's meta with the blend and rule in use: `without_vote`'s when vote is False."""
    meta = read_ensemble(folder)
    meta.setdefault("heuristic", 0.0)  # folders from before the vote
    if not vote and meta["heuristic"]:
        if "without_vote" not in meta:
            raise ValueError(f"{folder}: no settings without the vote (re-tune with `bodyblocks tune`)")
        meta.update(meta["without_vote"], heuristic=0.0)
    return meta


def load_extractor(kind: str, checkpoint: str | Path | None = None, *, device: str = "auto",
                   threshold: float | None = None, confident: float | None = None, rescue: float | None = None,
                   fallback: bool = False, batch_size: int = 16, threads: int | None = None,
                   vote: bool = True) -> BlockExtractor:
    """The block extractor of a checkpoint folder of `kind` (model, gbt, ensemble).

    Args:
        kind: what the folder must hold.
        checkpoint: the folder; None: the shipped one (`shipped`).
        device: "auto", "cpu" or "cuda" for the model's forward passes.
        threshold: P(body) at which a block is kept; None: the checkpoint's tuned value.
        confident: a page is low-confidence when no block reaches this; None: the checkpoint's value.
        rescue: on a page with no block at the threshold, keep those at or above this; None: the
            checkpoint's tuned value when the threshold is the checkpoint's too (else no rescue).
        fallback: low-confidence pages go to the heuristic extractor.
        batch_size: pages per forward pass of the model.
        threads: torch CPU threads for this process (None: leave torch's setting).
        vote: an ensemble without the heuristic's vote (the blend and rule tuned without it).
    Raises:
        FileNotFoundError: no such checkpoint (nothing shipped, or not trained yet).
        ValueError: the folder holds another kind, or settings out of range.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown checkpoint kind {kind!r}; choose from {', '.join(KINDS)}")
    folder = Path(checkpoint) if checkpoint else shipped(kind)
    if folder is None:
        raise FileNotFoundError(f"no shipped {kind} in {SHIPPED / SHIPPED_FOLDERS[kind]}; pass a checkpoint "
                                "folder or train one")
    meta = read_meta(folder)
    found = kind_of(folder, meta)
    if found != kind:
        raise ValueError(f"{folder}: a checkpoint of kind {found!r}, not {kind!r}")
    rule_opts = {"threshold": threshold, "confident": confident, "rescue": rescue}
    model_opts = {"device": device, "batch_size": batch_size, "threads": threads}
    if kind == GBT:
        return BlockExtractor(GBT, DecisionRule.from_meta(meta, **rule_opts), gbt=GbtScorer(GbtModel.load(folder)),
                              fallback=fallback)
    if kind == MODEL:
        return BlockExtractor(MODEL, DecisionRule.from_meta(meta, **rule_opts),
                              model=_model_scorer(folder, model_opts), fallback=fallback)
    meta = ensemble_settings(folder, vote)
    blend = Blend(float(meta["weight"]), float(meta["heuristic"]))
    model = _model_scorer(meta["model_path"], model_opts)
    gbt = GbtScorer(GbtModel.load(meta["gbt_path"]), model.cfg.tag_buckets if model.cfg.use_tag_path else None)
    return BlockExtractor(ENSEMBLE, DecisionRule.from_meta(meta, **rule_opts), model=model, gbt=gbt,
                          blend=blend, fallback=fallback)


def _model_scorer(folder: Path, opts: dict[str, Any]) -> Any:
    """The model's scorer; imported here, since it pulls in torch (the trees alone do not need it)."""
    from bodyblocks.inference.model_scorer import ModelScorer

    return ModelScorer.load(folder, **opts)
