"""The block classifier: block vectors -> d_model -> Transformer over the page's blocks -> body logits.

    cfg = ModelConfig()                                    # config.py; the model is built from it alone
    model = BlockClassifier(cfg)
    batch = collate([prepare_page(doc.blocks, cfg, labels=y) for doc, y in pages])
    out = model(batch, batch.labels)                       # out.logits (N, 2), out.loss

Inputs per block (`prepare_page`, the same code for training and inference):
  text  - a frozen encoder's vector (hf / e5-small, computed beforehand) or hashed n-gram ids (hash
          encoder, embedded inside the model so its weights train with it);
  tags  - tag-path token ids (features.tag_bags), embedded by an EmbeddingBag and mean-pooled;
  feats - features.block_features (DOM facts, text statistics, position in the page).
Forward:
  1. embed and concatenate the inputs of every real block, MLP to d_model               (N, d)
  2. place blocks into padded pages, add a sinusoidal encoding of the block index        (B, T, d)
  3. Transformer encoder with a padding mask; pages longer than `window` blocks run in
     overlapping windows and the logits of blocks seen twice are averaged                (B, T, 2)
  4. MLP head: 2 logits (non-body, body) per real block                                  (N, 2)
With use_context=False steps 2-3 are skipped and the head sees each block alone.
Blocks are packed: N = all real blocks of the batch in page order, so padding never reaches the loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from bodyblocks.classify import model_inputs as _inputs
from bodyblocks.classify.encoders import HashEncoder
from bodyblocks.classify.integrity import DIGESTS, WEIGHTS, check_model_folder, file_sha256
from bodyblocks.classify.model_inputs import (
    EXPORTS,
    FORMAT_VERSION,
    IGNORE,
    KIND,
    PageInputs,
    prepare_page,
    read_checkpoint,
    window_starts,
)
from bodyblocks.config import ModelConfig, to_dict
from bodyblocks.runtime.files import atomic_path, write_json

__all__ = ["FORMAT_VERSION", "IGNORE", "KIND", "BlockClassifier", "BlockOutput", "PageBatch", "PageInputs", "collate",
           "prepare_page", "read_checkpoint", "sinusoidal", "window_starts"]



@dataclass
class PageBatch:
    """Several pages as tensors; per-block tensors are packed (N = real blocks, in page order)."""

    mask: torch.Tensor  # (B, T) bool, True at real blocks
    features: torch.Tensor  # (N, F) float32
    tag_ids: torch.Tensor  # (M,) int64
    tag_offsets: torch.Tensor  # (N,) int64
    text_vectors: torch.Tensor | None = None  # (N, D) float32
    text_ids: torch.Tensor | None = None  # (K,) int64
    text_offsets: torch.Tensor | None = None  # (N,) int64
    labels: torch.Tensor | None = None  # (N,) int64

    @property
    def lengths(self) -> list[int]:
        """Blocks per page."""
        return self.mask.sum(1).tolist()

    def per_page(self, values: np.ndarray) -> list[np.ndarray]:
        """Per-block values (N, ...) of the batch's packed blocks, one array per page."""
        return np.split(values, np.cumsum(self.lengths)[:-1])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> PageBatch:
        """The batch on `device`."""
        moved = {
            f.name: None if (v := getattr(self, f.name)) is None else v.to(device, non_blocking=non_blocking)
            for f in fields(self)
        }
        return PageBatch(**moved)

    def pin_memory(self) -> PageBatch:
        """Page-locked copy (DataLoader pin_memory=True calls this)."""
        return PageBatch(
            **{f.name: None if (v := getattr(self, f.name)) is None else v.pin_memory() for f in fields(self)}
        )


def _bags(ids: list[np.ndarray], offsets: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate per-page EmbeddingBag inputs, shifting offsets."""
    shift = np.cumsum([0] + [len(x) for x in ids[:-1]])
    all_offsets = np.concatenate([o + s for o, s in zip(offsets, shift, strict=True)])
    return torch.from_numpy(np.concatenate(ids).astype(np.int64)), torch.from_numpy(all_offsets.astype(np.int64))


def collate(pages: Sequence[PageInputs]) -> PageBatch:
    """Batch pages (at least one); labels only when every page has them."""
    if not pages:
        raise ValueError("collate needs at least one page")
    lengths = torch.tensor([p.n for p in pages])
    mask = torch.arange(max(int(lengths.max()), 1))[None, :] < lengths[:, None]  # (B, T)
    tag_ids, tag_offsets = _bags([p.tag_ids for p in pages], [p.tag_offsets for p in pages])
    batch = PageBatch(mask, torch.from_numpy(np.concatenate([p.features for p in pages])), tag_ids, tag_offsets)
    if all(p.text_vectors is not None for p in pages):
        batch.text_vectors = torch.from_numpy(np.concatenate([p.text_vectors for p in pages]))
    if all(p.text_ids is not None for p in pages):
        batch.text_ids, batch.text_offsets = _bags([p.text_ids for p in pages], [p.text_offsets for p in pages])
    if all(p.labels is not None for p in pages):
        batch.labels = torch.from_numpy(np.concatenate([p.labels for p in pages]))
    return batch


# ----------------------------------------------------------------------------------------- model
def _cross_entropy(logits: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """Mean cross-entropy over the targets that are not IGNORE; a zero that still has a graph where all are."""
    if bool((targets != IGNORE).any()):
        return F.cross_entropy(logits.float(), targets, weight=weight, ignore_index=IGNORE)
    return logits.sum() * 0.0


class BlockOutput(NamedTuple):
    """What forward returns."""

    logits: torch.Tensor  # (N, 2): non-body, body
    loss: torch.Tensor | None  # scalar cross-entropy when labels were given


def sinusoidal(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """(T,) positions -> (T, dim) sine/cosine encoding (Vaswani et al.)."""
    freqs = torch.exp(torch.arange(0, dim, 2, device=positions.device) * (-math.log(10000.0) / dim))
    angles = positions.float()[:, None] * freqs[None, :]  # (T, dim/2)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(1)[:, :dim]


class BlockClassifier(nn.Module):
    """Body / non-body classifier over the blocks of pages (see the module docstring)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d, enc = cfg.d_model, cfg.encoder
        self.hash = HashEncoder(enc.buckets, enc.dim, enc.max_chars) if cfg.use_text and not enc.frozen else None
        self.text_norm = nn.LayerNorm(enc.dim) if cfg.use_text else None
        self.tags = nn.EmbeddingBag(cfg.tag_buckets, cfg.tag_dim, mode="mean") if cfg.use_tag_path else None
        in_dim = (enc.dim if cfg.use_text else 0) + (cfg.tag_dim if cfg.use_tag_path else 0) + cfg.block_columns
        self.embed = nn.Sequential(
            nn.Linear(in_dim, d), nn.GELU(), nn.Dropout(cfg.dropout), nn.Linear(d, d), nn.LayerNorm(d)
        )
        self.context: nn.TransformerEncoder | None = None
        if cfg.use_context:
            layer = nn.TransformerEncoderLayer(
                d, cfg.n_heads, cfg.d_ff, cfg.dropout, activation="gelu", batch_first=True, norm_first=True
            )
            layer.self_attn.dropout = cfg.attn_dropout  # MultiheadAttention reads it at each call
            self.context = nn.TransformerEncoder(layer, cfg.n_layers, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        self.head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Dropout(cfg.dropout), nn.Linear(d, 2))
        self.register_buffer("class_weights", torch.tensor(cfg.class_weights, dtype=torch.float32), persistent=False)

    def embed_blocks(self, batch: PageBatch) -> torch.Tensor:
        """(N, d_model) representation of every real block, before context."""
        parts = []
        if self.text_norm is not None:
            if self.hash is not None:
                assert batch.text_ids is not None and batch.text_offsets is not None, "batch lacks hash n-grams"
                text = self.hash(batch.text_ids, batch.text_offsets)  # (N, D)
            else:
                assert batch.text_vectors is not None, "batch lacks text vectors"
                text = batch.text_vectors  # (N, D)
            text = self.text_norm(text)
            if self.training and self.cfg.text_dropout > 0:  # whole vectors: the block must be judged without them
                keep = torch.rand(text.shape[0], 1, device=text.device) >= self.cfg.text_dropout
                text = text * keep.to(text.dtype)
            parts.append(text)
        if self.tags is not None:
            parts.append(self.tags(batch.tag_ids, batch.tag_offsets))  # (N, tag_dim)
        parts.append(batch.features)  # (N, F)
        return self.embed(torch.cat(parts, dim=-1))

    def _place(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(N, d) packed blocks -> (B, T, d) padded pages, with the sinusoidal encoding of the block index."""
        x = h.new_zeros(*mask.shape, h.shape[-1])
        x[mask] = h
        if self.cfg.positional:
            x = x + sinusoidal(torch.arange(x.shape[1], device=x.device), x.shape[-1]).to(x.dtype)
        return x

    def _encode(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The page context over (b, w, d) with padding; the Transformer's rows with no real block keep one slot
        unmasked (no NaN)."""
        assert self.context is not None
        pad = ~mask
        if not bool(pad.any()):  # no padding (one page, or equal lengths): the mask-free kernel is faster
            return self.context(x)
        empty = pad.all(dim=1)
        if empty.any():
            pad = pad.clone()
            pad[empty, 0] = False
        return self.context(x, src_key_padding_mask=pad)

    def _head_over_context(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(b, w, d) -> (b, w, 2) logits of one pass of the Transformer and the head."""
        return self.head(self._encode(x, mask))

    def _contextualise(self, x: torch.Tensor, mask: torch.Tensor, run: Any = None) -> torch.Tensor:
        """(B, T, d) -> (B, T, 2) logits, over overlapping windows when T > window; `run`: in place of
        _head_over_context (SinglePage's traced one)."""
        run = run or self._head_over_context
        B, T, _ = x.shape
        starts = window_starts(T, self.cfg.window, self.cfg.stride)
        if len(starts) == 1:
            return run(x, mask)
        W = self.cfg.window
        per = max(1, _inputs.MAX_WINDOW_ROWS // B)  # windows per call: a huge page's attention stays a bounded size
        parts = []
        for i in range(0, len(starts), per):
            some = starts[i : i + per]
            xs = torch.cat([x[:, s : s + W] for s in some])  # (windows * B, W, d), window-major
            ms = torch.cat([mask[:, s : s + W] for s in some])
            y = run(xs, ms)
            parts.append(y.view(len(some), B, W, y.shape[-1]))
        ys = torch.cat(parts) if len(parts) > 1 else parts[0]
        total = x.new_zeros(B, T, ys.shape[-1], dtype=ys.dtype)
        count = x.new_zeros(T, dtype=ys.dtype)
        for k, s in enumerate(starts):
            total[:, s : s + W] += ys[k]
            count[s : s + W] += 1
        return total / count[None, :, None]

    def forward(self, batch: PageBatch, labels: torch.Tensor | None = None) -> BlockOutput:
        """Logits (N, 2) for the batch's real blocks, and the cross-entropy when `labels` (N,) are given."""
        h = self.embed_blocks(batch)  # (N, d)
        if self.context is None:
            logits = self.head(h)
        else:
            logits = self._contextualise(self._place(h, batch.mask), batch.mask)[batch.mask]  # (N, 2)
        loss = None if labels is None else _cross_entropy(logits, labels, self.class_weights)
        return BlockOutput(logits, loss)

    @torch.inference_mode()
    def probabilities(self, batch: PageBatch) -> list[np.ndarray]:
        """P(body) per block, one array per page."""
        return batch.per_page(torch.softmax(self(batch).logits.float(), dim=-1)[:, 1].cpu().numpy())

    # ------------------------------------------------------------------------------------- checkpoints
    def save(self, directory: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write config.json (format_version, kind, model config, `extra`) and model.safetensors atomically."""
        from bodyblocks.version import __version__

        out = Path(directory)
        for stale in EXPORTS:  # made from the weights being replaced: `bodyblocks export` makes them anew
            (out / stale).unlink(missing_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        with atomic_path(out / "model.safetensors") as tmp:
            save_file(state, tmp, metadata={"format_version": str(FORMAT_VERSION)})
        meta = {"format_version": FORMAT_VERSION, "kind": KIND, "bodyblocks_version": __version__,
                "model": to_dict(self.cfg)}
        write_json(out / "config.json", {**meta, **(extra or {}),
                                         DIGESTS: {WEIGHTS: file_sha256(out / WEIGHTS)}})  # checked at load
        return out

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu") -> BlockClassifier:
        """Rebuild from a folder written by `save` (safetensors only: nothing is unpickled), in eval mode."""
        meta = read_checkpoint(directory)
        # its settings, the recorded digest of its weights, the settings against the weights' shapes: before
        # anything is allocated (a config of d_model 4096 against weights of 256 took 5.85 GB first)
        model = cls(check_model_folder(directory, meta, [WEIGHTS]))
        state = load_file(Path(directory) / "model.safetensors", device=str(device))
        model.load_state_dict(state, strict=True)
        return model.to(device).eval()

    def n_parameters(self) -> int:
        """Number of parameters."""
        return sum(p.numel() for p in self.parameters())
