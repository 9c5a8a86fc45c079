"""One command, a complete extractor: gold pages -> Transformer, trees, blend and rule, ONNX, in one folder.

    build("configs/default.yaml", "runs/build")     # bodyblocks build configs/default.yaml --out runs/build
    bodyblocks extract pages/ --out out/ --checkpoint runs/build

OUT after a build:
  config.json   the ensemble: its parts, the blend and the decision rule, chosen on the validation pages
  model/        the Transformer as shipped (fp16 weights, embed.onnx and context.onnx)
  gbt/          the boosted trees (trees.onnx)
  build.json    the command, the resolved config, what the parts were made with, the seconds of each stage
  train/        the Transformer's training run (best/, last/, metrics.csv): what --resume continues
Stages:
  1. train the Transformer on the config's train pages, early-stopped on its validation pages (training/loop.py)
  2. ship it: fp16 weights and the ONNX export (train.int8: context.onnx with int8 weights), checked against
     torch (training/ship.py); the blend is chosen on torch's probabilities either way
  3. train the trees on the same pages (training/fit_trees.py) and export them (training/export.py)
  4. choose the blend of model, trees and vote, and the decision rule, on the validation pages (training/tune.py)
  5. record build.json
Every choice is made on the train and validation pages of the config's datasets; no test page is read.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bodyblocks.config import Config, load_config, to_dict
from bodyblocks.runtime.files import write_json
from bodyblocks.training.cache import made_with

BUILD_FILE = "build.json"
STAGES = ("train", "ship", "trees", "blend")


def _done(out: Path, stage: str, cfg: Config) -> bool:
    """Whether `stage`'s output is complete in OUT (what --resume skips)."""
    if stage == "train":
        return (out / "train" / "best" / "model.safetensors").is_file() and _finished(out / "train", cfg)
    if stage == "ship":
        return (out / "model" / "context.onnx").is_file() or (out / "model" / "embed.onnx").is_file()
    if stage == "trees":
        return (out / "gbt" / "trees.onnx").is_file()
    return (out / "config.json").is_file()


def _finished(run: Path, cfg: Config) -> bool:
    """A training run that ended (early stopping, its epochs or its step limit: its last/ state says so), not one
    cut short."""
    from bodyblocks.loading.checkpoints import read_meta

    try:
        state = read_meta(run / "last")["train_state"]
    except (OSError, KeyError, ValueError):
        return False
    steps_done = bool(cfg.train.max_steps) and state.get("step", 0) >= cfg.train.max_steps
    return bool(state.get("stopped_early")) or state.get("epoch", 0) >= cfg.train.epochs or steps_done


def build(config: str | Path, out: str | Path, overrides: Sequence[str] = (), resume: bool = False,
          progress: bool = True, say: Callable[[str], None] = lambda msg: None) -> dict[str, Any]:
    """Build a complete extractor from CONFIG into OUT; returns build.json's content.

    Args:
        config: a YAML config (configs/default.yaml): its model, train, data, gbt and ensemble sections.
        out: the folder to write; it must not exist or be empty, unless `resume`.
        overrides: KEY=VALUE settings over the config (as `--set`).
        resume: go on with a build that stopped: the first stages whose outputs are complete are not run again
            (from the first one that runs, every later one runs too), and training continues from its last epoch.
        progress: training's progress bars.
        say: one line per stage (the command line prints them on stderr).
    Raises:
        FileExistsError: OUT holds files and `resume` is off.
        ValueError: `resume` with another config than the build's (its stages would not be this config's).
    """
    from bodyblocks.training.loop import train
    from bodyblocks.training.ship import ship_model
    from bodyblocks.training.tune import make_ensemble

    out = Path(out)
    if out.exists() and any(out.iterdir()) and not resume:
        raise FileExistsError(f"{out} is not empty: name a new folder, or add --resume to go on with that build")
    cfg: Config = load_config(config, list(overrides))
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, out_dir=str(out / "train")))
    out.mkdir(parents=True, exist_ok=True)
    record_path = out / BUILD_FILE
    record: dict[str, Any] = {
        "command": shlex.join(["bodyblocks", "build", str(config), "--out", str(out),
                               *[f"--set={o}" for o in overrides]]),
        "config": to_dict(cfg), "made_with": made_with(), "seconds": {}, "python": sys.version.split()[0]}
    if resume and record_path.is_file():
        before = json.loads(record_path.read_text(encoding="utf-8"))
        if before.get("config") != json.loads(json.dumps(record["config"])):  # as read back (tuples: lists)
            raise ValueError(f"{out} was built with another config: resume it with the same config and --set "
                             f"values ({before.get('command')}), or build into a new folder")
        record["seconds"] = before.get("seconds", {})
    work: dict[str, Callable[[], Any]] = {
        "train": lambda: train(cfg, resume=resume, progress=progress),
        "ship": lambda: ship_model(out / "train" / "best", out / "model", int8=cfg.train.int8),
        "trees": lambda: _trees(cfg, out),
        "blend": lambda: make_ensemble(out / "model", out / "gbt", out, cfg.data, cfg.ensemble),
    }
    ran = False  # a stage run again makes every later one run again: each is made from the one before
    for n, stage in enumerate(STAGES, 1):
        if resume and not ran and _done(out, stage, cfg):
            say(f"{n}. {stage}: done already")
            continue
        say(f"{n}. {stage} ...")
        ran = True
        start = time.perf_counter()
        result = work[stage]()
        record["seconds"][stage] = round(time.perf_counter() - start, 1)
        if stage == "blend":
            record["blend"] = result
        write_json(record_path, record)
        say(f"{n}. {stage}: {record['seconds'][stage]:.0f} s")
    record["seconds"]["total"] = round(sum(v for k, v in record["seconds"].items() if k in STAGES), 1)
    write_json(record_path, record)
    return record


def _trees(cfg: Config, out: Path) -> Any:
    """Stage 3: the trees trained and exported."""
    from bodyblocks.training.export import export_trees
    from bodyblocks.training.fit_trees import train_and_save

    metrics = train_and_save(cfg.data, out / "gbt", cfg.gbt)
    export_trees(out / "gbt")
    return metrics
