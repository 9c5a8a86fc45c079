"""Training cost of model shapes: CPU seconds per optimisation step on one thread, split into its parts, and the
epoch that makes, for each shape, on the same pages and batches in one run.

    python -m benchmarks.train_speed --steps 20
    python -m benchmarks.train_speed --shape small=model.n_layers=1,model.d_model=128,model.d_ff=256 --steps 20

Each shape is configs/default.yaml with `--set`-style overrides. A step is collate + forward + backward +
clipping + the optimizer; the first two steps of each shape are warm-up and not timed. The times are the
thread's CPU time (torch on one thread), which other processes on a busy machine change far less than the wall
clock. The epoch is the step time times the default config's steps per epoch on the training pages (bucketed
batches, as training/loop.batches makes them).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

import numpy as np
import torch

from bodyblocks.classify.model import BlockClassifier, collate
from bodyblocks.config import Config, load_config
from bodyblocks.training.data import load_pages
from bodyblocks.training.loop import batches, make_inputs, make_optimizer, seed_everything

SHAPES = {
    "default": [],
    "attention-dropout": ["model.attn_dropout=0.1"],
    "2x128": ["model.n_layers=2", "model.d_model=128", "model.d_ff=256"],
    "1x128": ["model.n_layers=1", "model.d_model=128", "model.d_ff=256"],
    "2x128-w256": ["model.n_layers=2", "model.d_model=128", "model.d_ff=256", "model.window=256",
                   "model.stride=192"],
    "2x128-w128": ["model.n_layers=2", "model.d_model=128", "model.d_ff=256", "model.window=128",
                   "model.stride=96"],
    "no-context": ["model.use_context=false"],
}


def step_times(cfg: Config, inputs: Sequence, steps: int, seed: int = 0) -> dict[str, float]:
    """Median seconds of each part of a training step over `steps` steps (after two untimed ones)."""
    seed_everything(seed)
    model = BlockClassifier(cfg.model)
    model.train()
    opt = make_optimizer(model, cfg)
    parts: dict[str, list[float]] = {"collate": [], "forward": [], "backward": [], "optimizer": []}
    order = list(batches(inputs, cfg.train.batch_pages, cfg.train.max_blocks, random.Random(1)))
    for i in range(steps + 2):
        pages = order[i % len(order)]
        t0 = time.thread_time()
        batch = collate(pages)
        t1 = time.thread_time()
        loss = model(batch, batch.labels).loss
        t2 = time.thread_time()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
        t3 = time.thread_time()
        opt.step()
        t4 = time.thread_time()
        if i >= 2:
            for name, secs in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                parts[name].append(secs)
    out = {name: float(np.median(v)) for name, v in parts.items()}
    out["step"] = sum(out.values())
    out["params"] = float(model.n_parameters())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/default.yaml")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=KEY=VALUE,KEY=VALUE",
                    help="a shape to time (repeatable); default: every shape in SHAPES")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per shape (20)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the model's initial weights (0)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the thread's CPU time is then the step's
    shapes = dict(SHAPES)
    if args.shape:
        shapes = {}
        for spec in args.shape:
            name, _, sets = spec.partition("=")
            shapes[name] = SHAPES.get(name, []) if not sets else sets.split(",")
    base = load_config(args.config)
    splits = load_pages(base.data)
    pages = splits["train"]
    base_inputs = make_inputs(pages, base.model)
    steps_per_epoch = sum(1 for _ in batches(base_inputs, base.train.batch_pages, base.train.max_blocks,
                                             random.Random(0)))
    print(f"{len(pages)} training pages, {steps_per_epoch} steps an epoch, CPU seconds on one thread, "
          f"{args.steps} timed steps a shape")
    print("| shape | parameters | collate | forward | backward | optimizer | s/step | min/epoch |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sets in shapes.items():
        cfg = load_config(args.config, sets)
        inputs = base_inputs if not sets else make_inputs(pages, cfg.model)
        t = step_times(cfg, inputs, args.steps, args.seed)
        print(f"| {name} | {t['params'] / 1e6:.2f} M | {t['collate']:.3f} | {t['forward']:.3f} | {t['backward']:.3f} "
              f"| {t['optimizer']:.3f} | {t['step']:.3f} | {t['step'] * steps_per_epoch / 60:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
