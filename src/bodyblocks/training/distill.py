"""A pretrained encoder's knowledge in the block model's own n-gram table: distillation.

    result = distill(texts, teacher_vectors, model_cfg.encoder, DistillConfig())   # `bodyblocks distill`
    save_table(result, "runs/distill/table.safetensors")                            # train.text_init

The student is the block model's text encoder as it ships (encoders.HashEncoder: the mean of the embeddings
of a text's hashed n-grams, `buckets` x `dim`), trained so that a linear map of its vector points where the
frozen teacher's (e5-small, any encoder with a vector cache) does: the cosine between the two, after the
teacher's vectors are centred on their mean (pretrained encoders put every text in one narrow cone; its axis
says nothing about a text), over the distinct block texts of the datasets the config names, with a share of
them held out to report the fit. The block model then starts from the table (`train.text_init`) and can keep
it fixed (`train.freeze_text`), so that what it learns from the labels sits on top of the teacher's view of
the text rather than on n-grams of the training sources' own sites. The model keeps its shape, its ONNX export
and its CPU cost: the teacher runs only here, once per text, from its cache.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bodyblocks.config import EncoderConfig
from bodyblocks.encoders import HashEncoder
from bodyblocks.features import ngram_bags
from bodyblocks.files import atomic_path

TABLE_KEY = "weight"  # the table's tensor in the saved file (the HashEncoder's bag.weight)


@dataclass
class DistillConfig:
    """How the student is fitted."""

    epochs: int = 4
    batch: int = 256  # texts per step
    lr: float = 0.1  # Adam (sparse on the table: only the rows a step touches), cosine decay to a tenth
    held_out: float = 0.02  # share of the distinct texts kept out of the fit, to report it
    seed: int = 0


@dataclass
class Distilled:
    """The fitted table and how well the student follows the teacher."""

    table: np.ndarray  # (buckets, dim) float32: the HashEncoder's bag.weight
    encoder: dict[str, object]  # the student's shape (buckets, dim, max_chars) and the teacher's id
    texts: int  # distinct texts fitted
    held_out: int  # distinct texts held out
    cosine: float  # mean cosine to the centred teacher on the held-out texts
    cosine_train: float  # the same on the fitted texts (a sample)
    seconds: float


class _Student(nn.Module):
    def __init__(self, enc: EncoderConfig, teacher_dim: int) -> None:
        super().__init__()
        self.hash = HashEncoder(enc.buckets, enc.dim, enc.max_chars)
        self.hash.bag.sparse = True  # a step's gradient holds the rows of its n-grams only
        self.norm = nn.LayerNorm(enc.dim)  # as the block model's text_norm reads the bag
        self.out = nn.Linear(enc.dim, teacher_dim)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.hash(ids, offsets)))


class _Bags:
    """Every text's n-gram ids, hashed once (ngram_bags over chunks of texts), sliced into a batch's bag."""

    def __init__(self, texts: Sequence[str], enc: EncoderConfig, chunk: int = 4096) -> None:
        ids, lengths = [], []
        for i in range(0, len(texts), chunk):
            part_ids, part_offsets = ngram_bags(texts[i : i + chunk], enc.buckets, enc.max_chars)
            ids.append(part_ids)
            lengths.append(np.diff(np.append(part_offsets, len(part_ids))))
        self.ids = np.concatenate(ids)
        self.starts = np.concatenate(([0], np.cumsum(np.concatenate(lengths))))

    def batch(self, idx: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [self.ids[self.starts[j] : self.starts[j + 1]] for j in idx]
        offsets = np.concatenate(([0], np.cumsum([len(p) for p in parts])[:-1]))
        return torch.from_numpy(np.concatenate(parts)), torch.from_numpy(offsets.astype(np.int64))


def distill(texts: Sequence[str], targets: np.ndarray, enc: EncoderConfig, cfg: DistillConfig | None = None,
            teacher: str = "", progress: Callable[[str], None] | None = None) -> Distilled:
    """Fit a HashEncoder of `enc`'s shape to the teacher's `targets` (one row per text of `texts`, distinct)."""
    cfg = cfg or DistillConfig()
    if len(texts) != len(targets):
        raise ValueError(f"{len(texts)} texts but {len(targets)} teacher vectors")
    if len(texts) < 2:
        raise ValueError("distillation needs at least two texts")
    if enc.kind != "hash":
        raise ValueError(f"the student is the hashed n-gram encoder, not {enc.kind!r}")
    start = time.perf_counter()
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    n_out = min(len(texts) - 1, max(1, int(len(texts) * cfg.held_out))) if cfg.held_out > 0 else 0
    held, fit = order[:n_out], order[n_out:]
    y = np.asarray(targets, np.float32)
    y = y - y[fit].mean(axis=0)  # the cone's axis, from the fitted texts only
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-6)
    target = torch.from_numpy(y)
    bags = _Bags(texts, enc)
    student = _Student(enc, y.shape[1])
    table = student.hash.bag.weight
    opts = [torch.optim.SparseAdam([table], lr=cfg.lr),
            torch.optim.Adam([p for p in student.parameters() if p is not table], lr=cfg.lr)]
    steps = cfg.epochs * math.ceil(len(fit) / cfg.batch)
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / steps)))
              for o in opts]
    for epoch in range(cfg.epochs):
        rng.shuffle(fit)
        total = 0.0
        for i in range(0, len(fit), cfg.batch):
            idx = fit[i : i + cfg.batch]
            loss = 1 - F.cosine_similarity(student(*bags.batch(idx)), target[idx]).mean()
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            for o, sched in zip(opts, scheds, strict=True):
                o.step()
                sched.step()
            total += loss.item() * len(idx)
        if progress is not None:
            progress(f"epoch {epoch + 1}/{cfg.epochs}: 1 - cosine {total / len(fit):.4f}")
    student.eval()

    @torch.no_grad()
    def cosine(idx: Sequence[int]) -> float:
        if not idx:
            return float("nan")
        sims = [F.cosine_similarity(student(*bags.batch(idx[i : i + 4096])), target[idx[i : i + 4096]])
                for i in range(0, len(idx), 4096)]
        return float(torch.cat(sims).mean())

    shape = {"kind": "hash", "buckets": enc.buckets, "dim": enc.dim, "max_chars": enc.max_chars, "teacher": teacher}
    return Distilled(table.detach().numpy().copy(), shape, len(fit), len(held), cosine(held),
                     cosine(fit[: max(len(held), 1000)]), time.perf_counter() - start)


def save_table(result: Distilled, path: str | Path) -> Path:
    """The table as safetensors (TABLE_KEY), its shape and fit in the file's metadata."""
    import json

    from safetensors.torch import save_file

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {**{k: str(v) for k, v in result.encoder.items()}, "texts": str(result.texts),
            "held_out": str(result.held_out), "cosine": f"{result.cosine:.4f}",
            "cosine_train": f"{result.cosine_train:.4f}"}
    with atomic_path(out) as tmp:
        save_file({TABLE_KEY: torch.from_numpy(result.table)}, tmp, metadata={"distilled": json.dumps(meta)})
    return out


def load_table(path: str | Path, enc: EncoderConfig) -> torch.Tensor:
    """A saved table, checked against the block model's text encoder (`enc`: kind hash, same buckets and dim)."""
    import json

    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = json.loads((f.metadata() or {}).get("distilled", "{}"))
        table = f.get_tensor(TABLE_KEY)
    want = (enc.buckets, enc.dim)
    if enc.kind != "hash" or tuple(table.shape) != want or int(meta.get("max_chars", enc.max_chars)) != enc.max_chars:
        raise ValueError(f"train.text_init: {path} holds a {tuple(table.shape)} table for max_chars "
                         f"{meta.get('max_chars')}; this model's text encoder is {enc.kind} {want}, max_chars "
                         f"{enc.max_chars}")
    return table.float()


def distinct_texts(texts: Sequence[str], max_chars: int) -> list[str]:
    """The texts cut as every encoder cuts them, once each, in first-seen order, empty ones left out."""
    seen: dict[str, None] = {}
    for t in texts:
        cut = t[:max_chars]
        if cut.strip():
            seen.setdefault(cut, None)
    return list(seen)
