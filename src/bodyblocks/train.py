"""Training: cached pages -> model inputs -> Adam + warm-up/cosine schedule -> early-stopped checkpoints.

    metrics = train(load_config("configs/default.yaml"))

Stages:
  1. load the processed pages of every dataset (cache.py; labels from gold alignment) and split them
     (data/splits, grouped by site; pages without a project split are split by a hash of their site);
  2. turn each page into model inputs once (hashed n-grams, or frozen-encoder vectors from the cache);
  3. each epoch: batches bucketed by block count, cross-entropy, gradient clipping, scheduled Adam(W);
  4. after each epoch: validation loss -> best/ (with the decision threshold tuned on validation) and
     last/ (with the optimizer state, so --resume continues); early stopping on validation loss.
Checkpoints are safetensors + JSON (model.py); nothing is pickled, the optimizer state included.
"""

from __future__ import annotations

import csv
import json
import math
import random
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bodyblocks.cache import CachedPage, load_cached
from bodyblocks.config import Config, DataConfig, ModelConfig, to_dict
from bodyblocks.model import IGNORE, BlockClassifier, PageInputs, collate, prepare_page


@dataclass
class Split:
    """Model inputs of one split, with the pages they came from."""

    pages: list[CachedPage]
    inputs: list[PageInputs]


# ----------------------------------------------------------------------------------------- data
def _hash_split(site: str) -> str:
    """80/10/10 by site for pages that have no project split (e.g. a user's own or a synthetic corpus)."""
    r = zlib.crc32(site.encode("utf-8")) % 10
    return "test" if r == 0 else "val" if r == 1 else "train"


def split_name(cp: CachedPage) -> str:
    """The page's split: data/splits when present, else the source's own, else by site hash."""
    if cp.split:
        return cp.split
    if cp.source_split in ("train", "dev"):
        return "train"
    if cp.source_split in ("test", "final"):
        return "test"
    return _hash_split(cp.site)


def load_pages(cfg: DataConfig, workers: int = 2) -> dict[str, list[CachedPage]]:
    """Labelled pages by split ("train", "val", "test") from the datasets that cfg names."""
    from bodyblocks.datasets import list_datasets, resolve_dataset

    if cfg.datasets:
        folders = [resolve_dataset(Path(cfg.root) / d if cfg.root else d) for d in cfg.datasets]
    else:
        folders = list_datasets(cfg.root)
    out: dict[str, list[CachedPage]] = {"train": [], "val": [], "test": []}
    for folder in folders:
        counts: dict[str, int] = {}
        for cp in load_cached(folder, cfg.cache_dir, workers=workers):
            if cp.error or not cp.blocks or cp.method == "none" or not any(cp.labels):
                continue
            if cfg.languages and cp.lang not in cfg.languages:
                continue
            name = split_name(cp)
            if cfg.max_pages and counts.get(name, 0) >= cfg.max_pages:
                continue
            counts[name] = counts.get(name, 0) + 1
            out.setdefault(name, []).append(cp)
    return out


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
    """Adam with decoupled weight decay on weight matrices only (not norms, biases, embeddings)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        is_matrix = p.dim() >= 2 and "bag" not in name and "tags" not in name
        (decay if is_matrix else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.train.lr)


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
        probs += np.split(p, np.cumsum(batch.lengths)[:-1])
    model.train()
    return total / max(n, 1), probs


def tune_threshold(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> tuple[float, float]:
    """The P(body) threshold with the best character-weighted F1 of body blocks on validation, and that F1."""
    lab = np.concatenate([np.asarray(cp.labels) for cp in pages]) if pages else np.zeros(0)
    w = np.concatenate([np.array([b.text_len for b in cp.blocks], float) for cp in pages]) if pages else np.zeros(0)
    p = np.concatenate(probs) if probs else np.zeros(0)
    best = (0.5, 0.0)
    for t in np.arange(0.05, 0.96, 0.05):
        pred = p >= t
        tp = float((w * (pred & (lab == 1))).sum())
        prec = tp / max(float((w * pred).sum()), 1e-9)
        rec = tp / max(float((w * (lab == 1)).sum()), 1e-9)
        f1 = 2 * prec * rec / max(prec + rec, 1e-9)
        if f1 > best[1]:
            best = (round(float(t), 2), f1)
    return best


def _page_f1(lab: np.ndarray, w: np.ndarray, keep: np.ndarray) -> float:
    """Character-weighted F1 of one page's kept blocks (a page with no body and nothing kept scores 1)."""
    tp = float(w[keep & (lab == 1)].sum())
    kept, body = float(w[keep].sum()), float(w[lab == 1].sum())
    if kept == 0 and body == 0:
        return 1.0
    return 2 * tp / max(kept + body, 1e-9)


def _page_items(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """(labels, block characters, P(body)) of each page that has blocks."""
    return [(np.asarray(cp.labels), np.array([b.text_len for b in cp.blocks], float), np.asarray(p))
            for cp, p in zip(pages, probs, strict=True) if len(p)]


MIN_RESCUE = 0.15  # the rescue threshold is never tuned below this (see tune_decision)


def tune_decision(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """The decision rule with the best mean per-page character F1 on validation: (threshold, rescue, score).

    Blocks with P(body) >= threshold are kept; on a page where none is, blocks with P(body) >= rescue are
    kept instead (rescue == threshold: no rescue). Pages count equally, as in the evaluation's per-page
    means, so a short article whose blocks all score just under the threshold is not traded away for a
    sliver of the long pages' characters. Every labelled page has a body, so validation cannot price
    answering a page that has none with navigation; rescue stays >= MIN_RESCUE so that a page whose
    blocks the model all but rules out still comes back empty and flagged.
    """
    grid = [round(float(t), 2) for t in np.arange(0.05, 0.96, 0.05)]
    items = _page_items(pages, probs)
    if not items:
        return 0.5, 0.5, 0.0
    best = (0.5, 0.5, -1.0)
    for t in grid:
        kept_sum, empty = 0.0, []
        for lab, w, p in items:
            keep = p >= t
            if keep.any():
                kept_sum += _page_f1(lab, w, keep)
            else:
                empty.append((lab, w, p))
        for r in [x for x in grid if MIN_RESCUE <= x <= t or x == t][::-1]:  # r == t first: only if it helps
            rescued = sum(_page_f1(lab, w, p >= r) for lab, w, p in empty)
            score = (kept_sum + rescued) / len(items)
            if score > best[2] + 1e-9:
                best = (t, r, score)
    return best


def recorded_data(meta: dict[str, Any]) -> DataConfig:
    """The data config a checkpoint's config.json recorded at training (all datasets when it has none)."""
    return DataConfig(**meta["data"]["config"]) if "data" in meta else DataConfig()


def retune(checkpoint: str | Path, data: DataConfig | None = None) -> dict[str, Any]:
    """Re-tune a checkpoint's decision rule (threshold, rescue) on the validation pages; rewrites config.json.

    Works for the neural model and for the gbt baseline (their folders say which), so both always share
    the same rule; an ensemble folder gets its weight re-tuned with the rule (ensemble.tune_ensemble).
    `data` picks the pages; None: the data config recorded in the checkpoint (else all).
    Returns the new rule with its per-page F1 on validation and the old rule's.
    """
    from bodyblocks.types import Document

    path = Path(checkpoint)
    meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if meta.get("kind") == "ensemble":  # its weight is tuned with the rule
        from bodyblocks.ensemble import tune_ensemble

        return tune_ensemble(path, data)
    if data is None:
        data = recorded_data(meta)
    val = load_pages(data)["val"]
    if not val:
        raise ValueError("no validation pages to tune on")
    if meta.get("kind") == "gbt":
        from bodyblocks.gbt import GbtModel

        gbt = GbtModel.load(path)
        probs = [gbt.page_probabilities(cp.blocks) for cp in val]
    else:
        from bodyblocks.predict import ModelExtractor

        probs = ModelExtractor(path, device="cpu", threads=None).probabilities([Document(cp.blocks) for cp in val])
    old_t = float(meta.get("threshold", 0.5))
    old_r = meta.get("rescue")
    old = tune_score(val, probs, old_t, old_t if old_r is None else float(old_r))
    threshold, rescue, score = tune_decision(val, probs)
    meta.update(threshold=threshold, rescue=rescue, confident=max(threshold, 0.5))
    meta.setdefault("metrics", {}).update(val_page_f1=score, threshold=threshold, rescue=rescue)
    tmp = path / "config.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path / "config.json")
    return {"threshold": threshold, "rescue": rescue, "val_page_f1": score, "val_pages": len(val),
            "before": {"threshold": old_t, "rescue": old_r, "val_page_f1": old}}


def tune_score(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], threshold: float, rescue: float) -> float:
    """Mean per-page character F1 of one decision rule (the extractors' predict.keep_mask)."""
    from bodyblocks.predict import keep_mask

    scores = [_page_f1(lab, w, keep_mask(p, threshold, rescue)) for lab, w, p in _page_items(pages, probs)]
    return float(np.mean(scores)) if scores else 0.0


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
    save_file(tensors, out / "optimizer.safetensors")


def load_state(out: Path, model: BlockClassifier, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore last/ written by save_state; returns the loop state."""
    from safetensors.torch import load_file

    from bodyblocks.model import read_checkpoint

    meta = read_checkpoint(out)
    model.load_state_dict(BlockClassifier.load(out).state_dict())
    tensors = load_file(out / "optimizer.safetensors")
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            st = {k.split(".", 2)[2]: v.to(p.device) for k, v in tensors.items() if k.startswith(f"{gi}.{pi}.")}
            if st:
                opt.state[p] = st
    return meta["train_state"]


# ----------------------------------------------------------------------------------------- the run
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


def train(cfg: Config, resume: bool = False, progress: bool = True,
          splits: dict[str, list[CachedPage]] | None = None) -> dict[str, Any]:
    """Train a block classifier; returns the best epoch's metrics (also in OUT/best/config.json).

    Args:
        cfg: model, training and data settings (configs/*.yaml).
        resume: continue from OUT/last after an interruption.
        progress: show a progress bar.
        splits: pages by split, instead of loading cfg.data (tests, ablation scripts).
    """
    from tqdm import tqdm

    from bodyblocks.encoders import make_encoder, resolve_device

    out = Path(cfg.train.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg.train.seed)
    device = resolve_device(cfg.train.device)
    # 1-2. pages and inputs
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
    amp = cfg.train.amp and device.type == "cuda"
    tb = _tensorboard(out)
    log_path = out / "metrics.csv"
    new_log = not (resume and log_path.exists())
    with open(log_path, "w" if new_log else "a", newline="") as fh:
        log = csv.writer(fh)
        if new_log:
            log.writerow(["epoch", "step", "lr", "train_loss", "val_loss", "threshold", "rescue", "val_char_f1",
                          "val_page_f1", "seconds"])
        # 3-4. epochs
        for epoch in range(state["epoch"], cfg.train.epochs):
            if state["step"] >= total:
                break
            start, losses = time.perf_counter(), []
            rng_epoch = random.Random(cfg.train.seed * 1000 + epoch)
            bar = tqdm(batches(train_in, cfg.train.batch_pages, cfg.train.max_blocks, rng_epoch), total=steps_per_epoch,
                       desc=f"epoch {epoch}", disable=not progress, leave=False)
            model.train()
            for pages in bar:
                lr = get_lr(state["step"], total, cfg)
                for g in opt.param_groups:
                    g["lr"] = lr
                batch = collate(pages).to(device, non_blocking=True)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                    loss = model(batch, batch.labels).loss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.train.grad_clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
                opt.step()
                losses.append(float(loss.detach()))
                state["step"] += 1
                bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", lr=f"{lr:.2e}")
                if state["step"] >= total:
                    break
            val_loss, val_probs = estimate_loss(model, val_in, cfg, device)
            _, f1 = tune_threshold(splits["val"], val_probs)
            threshold, rescue, page_f1 = tune_decision(splits["val"], val_probs)
            secs = time.perf_counter() - start
            state["epoch"] = epoch + 1
            loss_improved = val_loss < state["best_val"]
            improved = loss_improved if cfg.train.select == "loss" else page_f1 > state.get("best_f1", -1.0)
            if loss_improved:  # early stopping always watches the validation loss
                state.update(best_val=val_loss, bad_epochs=0)
            else:
                state["bad_epochs"] += 1
            if improved:
                state.update(best_epoch=epoch, best_f1=page_f1)
                extra = _best_extra(cfg, epoch, val_loss, (threshold, rescue), (f1, page_f1), splits)
                model.save(out / "best", extra=extra)
            save_state(out / "last", model, opt, state)
            log.writerow([epoch, state["step"], f"{lr:.3e}", f"{np.mean(losses):.5f}", f"{val_loss:.5f}", threshold,
                          rescue, f"{f1:.4f}", f"{page_f1:.4f}", f"{secs:.1f}"])
            fh.flush()
            if tb is not None:
                tb.add_scalars("loss", {"train": float(np.mean(losses)), "val": val_loss}, epoch)
            if progress:
                print(f"epoch {epoch}: train {np.mean(losses):.4f} val {val_loss:.4f} threshold {threshold} rescue "
                      f"{rescue} char-F1 {f1:.4f} page-F1 {page_f1:.4f} {'*' if improved else ''} ({secs:.0f} s)")
            if state["bad_epochs"] >= cfg.train.patience:
                break
    meta = json.loads((out / "best" / "config.json").read_text())
    return meta["metrics"]


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
    }
