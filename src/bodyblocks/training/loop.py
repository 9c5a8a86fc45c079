"""Training the block classifier: cached pages -> model inputs -> scheduled Adam -> early-stopped checkpoints.

    metrics = train(load_config("configs/default.yaml"))

Stages:
  1. load the processed pages of every dataset (data.py, cache.py; labels from gold alignment) and split
     them (data/splits, grouped by site; pages without a project split are split by a hash of their site);
  2. turn each page into model inputs once (hashed n-grams, or frozen-encoder vectors from the cache);
  3. each epoch: batches bucketed by block count, cross-entropy, gradient clipping, scheduled Adam(W);
  4. after each epoch: validation loss -> best/ (with the decision threshold tuned on validation) and
     last/ (with the optimizer state, so --resume continues); early stopping on validation loss.
Checkpoints are safetensors + JSON (model.py); nothing is pickled, the optimizer state included.
"""

from __future__ import annotations

import csv
import math
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bodyblocks.classify.encoders import make_encoder, resolve_device
from bodyblocks.classify.model import IGNORE, BlockClassifier, PageInputs, collate, prepare_page, read_checkpoint
from bodyblocks.config import Config, ModelConfig, to_dict
from bodyblocks.loading.checkpoints import read_meta
from bodyblocks.runtime.files import atomic_path
from bodyblocks.training.cache import CachedPage, made_with
from bodyblocks.training.data import load_pages
from bodyblocks.training.tune import pooled_char_f1, tune_rule


# ----------------------------------------------------------------------------------------- data
def make_inputs(pages: Sequence[CachedPage], cfg: ModelConfig, encoder: Any = None) -> list[PageInputs]:
    """Model inputs with labels for each page (frozen encoders: vectors through their disk cache)."""
    inputs = []
    for cp in pages:
        vectors = encoder.encode([b.text for b in cp.blocks]) if encoder is not None else None
        inputs.append(prepare_page(cp.blocks, cfg, text_vectors=vectors, labels=cp.labels))
    return inputs


def batches(inputs: Sequence[PageInputs], batch_pages: int, max_blocks: int, rng: random.Random,
            shuffle: bool = True) -> Iterator[list[PageInputs]]:
    """Pages bucketed by block count (little padding), at most batch_pages and ~max_blocks per batch."""
    order = sorted(range(len(inputs)), key=lambda i: inputs[i].n + (rng.random() * 20 if shuffle else 0))
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = max([inputs[j].n for j in current] + [inputs[i].n])
        if current and (len(current) >= batch_pages or longest * (len(current) + 1) > max_blocks):
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    if shuffle:
        rng.shuffle(groups)
    for g in groups:
        yield [inputs[i] for i in g]


# ----------------------------------------------------------------------------------------- loop helpers
def get_lr(step: int, total: int, cfg: Config) -> float:
    """Linear warm-up, then cosine decay to lr * min_lr_ratio."""
    t = cfg.train
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    progress = min(1.0, (step - t.warmup_steps) / max(1, total - t.warmup_steps))
    return t.lr * (t.min_lr_ratio + (1 - t.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model: torch.nn.Module, cfg: Config) -> torch.optim.Optimizer:
    """Adam with decoupled weight decay on weight matrices only (not norms, biases, embeddings); the embedding
    tables (n-gram and tag-path bags) learn at train.table_lr times the schedule's rate (their group's lr_scale)."""
    decay, no_decay, tables = [], [], []
    for name, p in model.named_parameters():
        is_table = p.dim() >= 2 and ("bag" in name or "tags" in name)
        (tables if is_table else decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.train.weight_decay, "lr_scale": 1.0},
              {"params": no_decay, "weight_decay": 0.0, "lr_scale": 1.0},
              {"params": tables, "weight_decay": 0.0, "lr_scale": cfg.train.table_lr}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.train.lr)


@torch.no_grad()
def estimate_loss(model: BlockClassifier, inputs: Sequence[PageInputs], cfg: Config,
                  device: torch.device) -> tuple[float, list[np.ndarray]]:
    """Mean validation loss (per block) and P(body) per page, in input order."""
    model.eval()
    total, n = 0.0, 0
    probs: list[np.ndarray] = []
    for i in range(0, len(inputs), cfg.train.batch_pages):
        batch = collate(inputs[i : i + cfg.train.batch_pages]).to(device)
        out = model(batch, batch.labels)
        real = int((batch.labels != IGNORE).sum())
        total += float(out.loss) * real
        n += real
        p = torch.softmax(out.logits.float(), -1)[:, 1].cpu().numpy()
        probs += batch.per_page(p)
    model.train()
    return total / max(n, 1), probs


# ----------------------------------------------------------------------------------------- checkpoints
def save_state(out: Path, model: BlockClassifier, opt: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """last/: model + optimizer tensors (safetensors) + loop state (JSON): everything --resume needs."""
    from safetensors.torch import save_file

    model.save(out, extra={"train_state": state})
    tensors: dict[str, torch.Tensor] = {}
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            for k, v in opt.state.get(p, {}).items():
                tensors[f"{gi}.{pi}.{k}"] = (v if torch.is_tensor(v) else torch.tensor(v)).detach().cpu().contiguous()
    with atomic_path(out / "optimizer.safetensors") as tmp:
        save_file(tensors, tmp)


def load_state(out: Path, model: BlockClassifier, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore last/ written by save_state; returns the loop state."""
    from safetensors.torch import load_file

    meta = read_checkpoint(out)
    model.load_state_dict(BlockClassifier.load(out).state_dict())
    tensors = load_file(out / "optimizer.safetensors")
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            st = {k.split(".", 2)[2]: v.to(p.device) for k, v in tensors.items() if k.startswith(f"{gi}.{pi}.")}
            if any(v.dim() and v.shape != p.shape for v in st.values()):
                raise ValueError(f"{out}: its optimizer state does not fit this run's parameter groups (made by "
                                 "another version or config); train again without --resume")
            if st:
                opt.state[p] = st
    return meta["train_state"]


# ----------------------------------------------------------------------------------------- the run
def init_from(model: BlockClassifier, folder: str | Path) -> None:
    """Start from a checkpoint's weights (fine-tuning): its model config must be this run's."""
    start = BlockClassifier.load(folder)
    if to_dict(start.cfg) != to_dict(model.cfg):
        raise ValueError(f"train.init: {folder} has another model config than this run")
    model.load_state_dict(start.state_dict(), strict=True)


def seed_everything(seed: int) -> random.Random:
    """Seed Python, NumPy and torch; return the batch-order generator."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return random.Random(seed)


def _tensorboard(out: Path) -> Any:
    """A SummaryWriter when tensorboard is installed, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(out / "tb"))


@dataclass
class Run:
    """A training run between epochs: its settings, data, model, optimizer and loop state."""

    cfg: Config
    out: Path
    device: torch.device
    splits: dict[str, list[CachedPage]]
    train_in: list[PageInputs]
    val_in: list[PageInputs]
    model: BlockClassifier
    opt: torch.optim.Optimizer
    steps_per_epoch: int
    total: int  # optimisation steps of the whole run
    state: dict[str, Any]  # epoch, step, best_val, best_f1, bad_epochs, best_epoch (saved in last/)
    amp: bool  # bf16 autocast (CUDA)


def _start(cfg: Config, resume: bool, splits: dict[str, list[CachedPage]] | None) -> Run:
    """Stages 1-2 and the model: pages, inputs, model, optimizer, schedule length; last/ when resuming."""
    out = Path(cfg.train.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.train.seed)
    device = resolve_device(cfg.train.device)
    splits = splits or load_pages(cfg.data)
    if not splits.get("train") or not splits.get("val"):
        raise ValueError(f"need train and validation pages, got { {k: len(v) for k, v in splits.items()} }")
    frozen = cfg.model.use_text and cfg.model.encoder.frozen
    encoder = make_encoder(cfg.model.encoder, device=str(device)) if frozen else None
    train_in = make_inputs(splits["train"], cfg.model, encoder)
    val_in = make_inputs(splits["val"], cfg.model, encoder)
    model = BlockClassifier(cfg.model).to(device)
    opt = make_optimizer(model, cfg)
    steps_per_epoch = sum(1 for _ in batches(train_in, cfg.train.batch_pages, cfg.train.max_blocks, random.Random(0)))
    total = steps_per_epoch * cfg.train.epochs
    if cfg.train.max_steps:
        total = min(total, cfg.train.max_steps)
    state = {"epoch": 0, "step": 0, "best_val": float("inf"), "best_f1": -1.0, "bad_epochs": 0, "best_epoch": -1}
    if resume and (out / "last" / "optimizer.safetensors").exists():
        state = load_state(out / "last", model, opt)
    elif cfg.train.init:
        init_from(model, cfg.train.init)
    return Run(cfg, out, device, splits, train_in, val_in, model, opt, steps_per_epoch, total, state,
               cfg.train.amp and device.type == "cuda")


def _train_epoch(run: Run, epoch: int, progress: bool) -> tuple[list[float], float]:
    """Stage 3: one epoch of scheduled optimisation steps; (losses, last learning rate)."""
    from tqdm import tqdm

    cfg, state, losses, lr = run.cfg, run.state, [], 0.0
    rng_epoch = random.Random(cfg.train.seed * 1000 + epoch)
    bar = tqdm(batches(run.train_in, cfg.train.batch_pages, cfg.train.max_blocks, rng_epoch),
               total=run.steps_per_epoch, desc=f"epoch {epoch}", disable=not progress, leave=False)
    run.model.train()
    for pages in bar:
        lr = get_lr(state["step"], run.total, cfg)
        for g in run.opt.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)
        batch = collate(pages).to(run.device, non_blocking=True)
        with torch.autocast(run.device.type, dtype=torch.bfloat16, enabled=run.amp):
            out = run.model(batch, batch.labels)
            loss = out.loss
        run.opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.train.grad_clip:
            torch.nn.utils.clip_grad_norm_(run.model.parameters(), cfg.train.grad_clip)
        run.opt.step()
        losses.append(float(loss.detach()))
        state["step"] += 1
        bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", lr=f"{lr:.2e}")
        if state["step"] >= run.total:
            break
    return losses, lr


def _validate(run: Run, epoch: int) -> dict[str, Any]:
    """Stage 4: validation loss and the tuned rule; best/ when the epoch improved, last/ always."""
    cfg, state = run.cfg, run.state
    val_loss, val_probs = estimate_loss(run.model, run.val_in, cfg, run.device)
    _, f1 = pooled_char_f1(run.splits["val"], val_probs)
    threshold, rescue, page_f1 = tune_rule(run.splits["val"], val_probs)
    state["epoch"] = epoch + 1
    loss_improved = val_loss < state["best_val"]
    improved = loss_improved if cfg.train.select == "loss" else page_f1 > state.get("best_f1", -1.0)
    if loss_improved:  # early stopping always watches the validation loss
        state.update(best_val=val_loss, bad_epochs=0)
    else:
        state["bad_epochs"] += 1
    if improved:
        state.update(best_epoch=epoch, best_f1=page_f1)
        extra = _best_extra(cfg, epoch, val_loss, (threshold, rescue), (f1, page_f1), run.splits)
        run.model.save(run.out / "best", extra=extra)
    save_state(run.out / "last", run.model, run.opt, state)
    return {"val_loss": val_loss, "threshold": threshold, "rescue": rescue, "f1": f1, "page_f1": page_f1,
            "improved": improved}


LOG_COLUMNS = ["epoch", "step", "lr", "train_loss", "val_loss", "threshold", "rescue", "val_char_f1", "val_page_f1",
               "seconds"]


def train(cfg: Config, resume: bool = False, progress: bool = True,
          splits: dict[str, list[CachedPage]] | None = None) -> dict[str, Any]:
    """Train a block classifier; returns the best epoch's metrics (also in OUT/best/config.json).

    Args:
        cfg: model, training and data settings (configs/*.yaml).
        resume: continue from OUT/last after an interruption.
        progress: show a progress bar.
        splits: pages by split, instead of loading cfg.data (tests, ablation scripts).
    """
    run = _start(cfg, resume, splits)  # 1-2. pages and inputs
    if run.state.get("stopped_early"):  # a run early stopping ended, resumed: its best/ stands
        return read_meta(run.out / "best")["metrics"]
    tb = _tensorboard(run.out)
    log_path = run.out / "metrics.csv"
    new_log = not (resume and log_path.exists())
    with open(log_path, "w" if new_log else "a", newline="") as fh:
        log = csv.writer(fh)
        if new_log:
            log.writerow(LOG_COLUMNS)
        for epoch in range(run.state["epoch"], cfg.train.epochs):  # 3-4. epochs
            if run.state["step"] >= run.total:
                break
            start = time.perf_counter()
            losses, lr = _train_epoch(run, epoch, progress)
            v = _validate(run, epoch)
            secs = time.perf_counter() - start
            log.writerow([epoch, run.state["step"], f"{lr:.3e}", f"{np.mean(losses):.5f}", f"{v['val_loss']:.5f}",
                          v["threshold"], v["rescue"], f"{v['f1']:.4f}", f"{v['page_f1']:.4f}", f"{secs:.1f}"])
            fh.flush()
            if tb is not None:
                tb.add_scalars("loss", {"train": float(np.mean(losses)), "val": v["val_loss"]}, epoch)
            if progress:
                print(f"epoch {epoch}: train {np.mean(losses):.4f} val {v['val_loss']:.4f} threshold {v['threshold']} "
                      f"rescue {v['rescue']} char-F1 {v['f1']:.4f} page-F1 {v['page_f1']:.4f} "
                      f"{'*' if v['improved'] else ''} ({secs:.0f} s)")
            if run.state["bad_epochs"] >= cfg.train.patience:
                run.state["stopped_early"] = True  # so a resume does not train on past it
                save_state(run.out / "last", run.model, run.opt, run.state)
                break
    return read_meta(run.out / "best")["metrics"]


def _best_extra(cfg: Config, epoch: int, val_loss: float, rule: tuple[float, float], f1: tuple[float, float],
                splits: dict[str, list[CachedPage]]) -> dict[str, Any]:
    """What best/config.json records beside the model config (rule: threshold, rescue; f1: pooled, per page)."""
    threshold, rescue = rule
    return {
        "threshold": threshold,
        "rescue": rescue,
        "confident": max(threshold, 0.5),
        "metrics": {"epoch": epoch, "val_loss": val_loss, "val_char_f1": f1[0], "val_page_f1": f1[1],
                    "threshold": threshold, "rescue": rescue},
        "train_config": to_dict(cfg.train),
        "data": {"config": to_dict(cfg.data), "pages": {k: len(v) for k, v in splits.items()}},
        "made_with": made_with(),
    }
