"""Subcommands that make the learned parts: train, tune, ensemble, finetune, train-gbt, ship, export."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


# --- train, tune, ensemble (training/loop.py, training/tune.py) -----------------------------------------------
def add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a block classifier from a config (configs/*.yaml)")
    p.add_argument("config", help="YAML config, e.g. configs/default.yaml")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last after an interruption")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.lr=1e-3 (repeatable)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(handler=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    import torch

    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.loop import train

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg = load_config(args.config, args.overrides)
    except (ConfigError, OSError) as exc:
        print(f"bodyblocks train: {exc}", file=sys.stderr)
        return 2
    metrics = train(cfg, resume=args.resume, progress=not args.no_progress)
    print(json.dumps(metrics, indent=2))
    return 0


def add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="re-tune a checkpoint's decision rule (threshold, rescue) on validation")
    p.add_argument("checkpoint", help="model, gbt or ensemble folder (config.json is rewritten; an ensemble's "
                                      "weights too, which needs the validation pages' HTML in the datasets)")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages (default: the checkpoint's own)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set data.root=DIR (repeatable)")
    p.set_defaults(handler=_run_tune)


def add_ensemble(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ensemble", help="blend a model, a gbt checkpoint and the heuristic's vote; weights and rule "
                                        "tuned on the validation pages (their HTML is read from the datasets)")
    p.add_argument("model", help="model checkpoint folder, e.g. checkpoints/default")
    p.add_argument("gbt", help="gbt checkpoint folder, e.g. checkpoints/gbt")
    p.add_argument("--out", required=True, help="ensemble folder to write (config.json with relative paths)")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages (default: the model's own) and whose "
                        "ensemble section the blends tried")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set 'ensemble.vote_weights=[0.0]'")
    p.set_defaults(handler=_run_ensemble)


def _json_or_error(command: str, call: Callable[[], Any]) -> int:
    """Run `call` and print its result as JSON (exit status 0), or its error in one line (exit status 2)."""
    from bodyblocks.config import ConfigError

    try:
        result = call()
    except (ConfigError, OSError, ValueError, KeyError) as exc:
        print(f"bodyblocks {command}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


def _run_ensemble(args: argparse.Namespace) -> int:
    from bodyblocks.config import load_config
    from bodyblocks.training.tune import make_ensemble

    def call() -> Any:
        cfg = load_config(args.config, args.overrides) if args.config or args.overrides else None
        return make_ensemble(args.model, args.gbt, args.out, cfg and cfg.data, cfg and cfg.ensemble)

    return _json_or_error("ensemble", call)


def _run_tune(args: argparse.Namespace) -> int:
    from bodyblocks.config import load_config
    from bodyblocks.training.tune import retune

    def call() -> Any:
        cfg = load_config(args.config, args.overrides) if args.config or args.overrides else None
        return retune(args.checkpoint, cfg and cfg.data, cfg and cfg.ensemble)

    return _json_or_error("tune", call)


def add_finetune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("finetune", help="continue the shipped ensemble (or --from) on your own labelled pages "
                                        "(bodyblocks annotate), and show it before and after on held-out sites")
    p.add_argument("dataset", help="a dataset folder with annotations (DATASET/annotations or --labels)")
    p.add_argument("--labels", default=None, metavar="DIR", help="the annotations folder, when not DATASET/annotations")
    p.add_argument("--from", dest="base", default=None, metavar="CHECKPOINT",
                   help="the ensemble to start from (default: the shipped one)")
    p.add_argument("--out", required=True, help="folder for the run; OUT/ensemble is the new extractor. A rerun "
                                                "with the same OUT resumes")
    p.add_argument("--held-out", type=float, default=0.5, help="share of the pages (whole sites) held out (0.5)")
    p.add_argument("--mix", type=int, default=300, help="the base model's own training pages mixed in (300; a "
                                                        "third as many of its validation pages)")
    p.add_argument("--user-share", type=float, default=0.3,
                   help="share of the training pages that are yours, by repetition (0.3)")
    p.add_argument("--epochs", type=int, default=4, help="passes over the training pages (4)")
    p.add_argument("--lr", type=float, default=1e-4, help="the learning rate (1e-4: a small step from the base)")
    p.add_argument("--seed", type=int, default=0, help="seed of the held-out draw and the training order")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(handler=_run_finetune)


def _run_finetune(args: argparse.Namespace) -> int:
    from bodyblocks.training.finetune import finetune

    finetune(args.dataset, args.out, base=args.base, labels=args.labels, held_out=args.held_out, mix=args.mix,
             user_share=args.user_share, epochs=args.epochs, lr=args.lr, seed=args.seed,
             progress=not args.no_progress, say=lambda msg: print(msg, file=sys.stderr))
    return 0


# --- end train ------------------------------------------------------------------------------------------------


def add_build(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a complete extractor from a config: the Transformer, the trees, the blend "
                                     "and rule, the ONNX exports, in one folder that --checkpoint runs")
    p.add_argument("config", help="YAML config, e.g. configs/default.yaml (its data section picks the gold pages)")
    p.add_argument("--out", required=True, help="the folder to write (new or empty; with --resume, a build's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set model.n_layers=1 (repeatable)")
    p.add_argument("--resume", action="store_true", help="go on with a build that stopped (finished stages stay)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(handler=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    from bodyblocks.training.build import build

    if args.threads < 0:
        print("bodyblocks build: --threads must be 0 (torch's default) or more", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    call = lambda: build(args.config, args.out, args.overrides, resume=args.resume,  # noqa: E731
                         progress=not args.no_progress, say=lambda msg: print(msg, file=sys.stderr))
    try:
        record = call()
    except FileExistsError as exc:
        print(f"bodyblocks build: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the config's and the data's errors, in one line
        from bodyblocks.config import ConfigError

        if isinstance(exc, (ConfigError, OSError, ValueError, KeyError)):
            print(f"bodyblocks build: {exc}", file=sys.stderr)
            return 2
        raise
    print(json.dumps({"out": args.out, "seconds": record["seconds"], "blend": record.get("blend")}, indent=2))
    return 0


# --- gbt, ship, export (training/fit_trees.py, ship.py, export.py) ----------------------------------------------------
def add_gbt(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train-gbt", help="train the gradient-boosted tree baseline on the block features")
    p.add_argument("config", nargs="?", default=None,
                   help="YAML config whose data section picks the pages and whose gbt section sets the trees")
    p.add_argument("--out", default="checkpoints/gbt", help="checkpoint folder (default: checkpoints/gbt)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set data.max_pages=50 or gbt.max_leaf_nodes=63 (repeatable)")
    p.add_argument("--max-iter", type=int, default=None, help="boosting iterations (as --set gbt.max_iter=N)")
    p.set_defaults(handler=_run_gbt)


def _run_gbt(args: argparse.Namespace) -> int:
    from bodyblocks.config import ConfigError, load_config
    from bodyblocks.training.fit_trees import train_and_save

    overrides = [*args.overrides, *([f"gbt.max_iter={args.max_iter}"] if args.max_iter is not None else [])]
    try:
        cfg = load_config(args.config, overrides)
    except (ConfigError, OSError) as exc:
        print(f"bodyblocks train-gbt: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(train_and_save(cfg.data, args.out, cfg.gbt), indent=2))
    return 0


def add_ship(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ship", help="make a trained model checkpoint a shipped one (fp16 weights, no train state)")
    p.add_argument("checkpoint", help="a trained model folder, e.g. runs/default/best")
    p.add_argument("--out", required=True, help="the folder to write, e.g. checkpoints/default")
    p.set_defaults(handler=_run_ship)


def _run_ship(args: argparse.Namespace) -> int:
    from bodyblocks.training.ship import ship_model

    return _json_or_error("ship", lambda: ship_model(args.checkpoint, args.out))


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export checkpoints for ONNX Runtime (CPU extraction without torch), checked "
                                      "against torch on real pages")
    p.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT", help="model, gbt or ensemble folders")
    p.add_argument("--pages", default=None,
                   help="a folder of HTML pages to check the export on (default: the sample pages, synthetic "
                        "pages and 200 dataset pages when the shared datasets are here)")
    p.add_argument("--int8", action="store_true",
                   help="give the Transformer (context.onnx) int8 weights: a faster forward pass on the CPU, "
                        "checked against torch within |dP| 0.05 (training/export.quantize_context)")
    p.set_defaults(handler=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from bodyblocks.training.export import export_checkpoint

    for folder in args.checkpoints:
        for check in export_checkpoint(folder, args.pages, args.int8):
            print(check)
    return 0


# --- end gbt --------------------------------------------------------------------------------------------------
