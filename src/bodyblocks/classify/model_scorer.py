"""The block Transformer as a part of a block extractor: P(body) per block of segmented pages.

    model = ModelScorer.load("checkpoints/default", device="cpu")
    batches = model.prepare(docs)                 # model inputs (NumPy), this thread
    probs = model.forward(docs, batches)          # torch only: any thread (the batch runner overlaps it)

Forward passes batch pages by block count. The trees (gbt.GbtScorer) start from the same block features and
tag-path ids as the model (`page_inputs`), so those are computed once when both run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bodyblocks.classify.encoders import make_encoder, resolve_device
from bodyblocks.classify.model import BlockClassifier, PageBatch, collate
from bodyblocks.classify.model_inputs import ModelBatch, PageInputs, PageScorer
from bodyblocks.classify.traced import trace_single_page
from bodyblocks.runtime.cores import default_threads
from bodyblocks.types import Document


class ModelScorer(PageScorer):
    """The block Transformer's P(body), in two steps: prepare (NumPy) and forward (torch)."""

    engine = "torch"

    def __init__(self, model: BlockClassifier, encoder: Any, device: torch.device, batch_size: int = 16) -> None:
        """
        Args:
            model: the block classifier, in eval mode on `device`.
            encoder: the frozen text encoder of a model that reads its vectors (None otherwise).
            device: where the forward passes run.
            batch_size: pages per forward pass.
        """
        self.model, self.cfg, self.encoder, self.device = model, model.cfg, encoder, device
        self.batch_size = batch_size
        self.bf16 = device.type == "cuda"
        # one-page batches (the batch runner's on CPU) go through the traced forward pass when it is exact
        self.single = trace_single_page(model) if device.type == "cpu" else None

    @classmethod
    def load(cls, checkpoint: str | Path, *, device: str = "auto", batch_size: int = 16,
             threads: int | None = None) -> ModelScorer:
        """A model checkpoint folder (config.json + model.safetensors) on `device`.

        `threads`: torch CPU threads for this process; None: what `bodyblocks extract` gives with its defaults
        (cores.default_threads(1, overlap=True): the usable cores less one, at least one).
        On the 2-core machine here a page's forward pass took 13 ms with 2 threads and 18 ms with 1
        (the retired profile_stages benchmark: CHANGELOG.md, Removed; profiles today: docs/SPEED.md).
        """
        dev = resolve_device(device)
        if dev.type == "cpu":
            torch.set_num_threads(threads or default_threads(1, overlap=True))
        model = BlockClassifier.load(checkpoint, device=dev)
        frozen = model.cfg.use_text and model.cfg.encoder.frozen
        encoder = make_encoder(model.cfg.encoder, device=str(dev)) if frozen else None
        return cls(model, encoder, dev, batch_size)

    def open(self) -> None:
        """Scorer.open: nothing to open, the model is loaded on its device already."""

    def warm_up(self) -> None:
        """Scorer.warm_up: nothing beyond `inputs` (the traced forward pass was made at load)."""

    def prepare(self, docs: Sequence[Document]) -> list[ModelBatch]:
        """The forward passes' batches with their inputs, collated here (Python and NumPy, not forward's)."""
        out = []
        for idx in self.batches(docs):
            pages = None if self.encoder is not None else [self.inputs(docs[i]) for i in idx]
            out.append(ModelBatch(idx, pages, None if pages is None else collate(pages)))
        return out

    def batches_from(self, docs: Sequence[Document], inputs: Sequence[PageInputs | None]) -> list[ModelBatch]:
        """PageScorer.batches_from, collated here (a frozen encoder's pages are left to forward, as in prepare)."""
        if self.encoder is not None:
            return self.prepare(docs)
        out = []
        for idx in self.batches(docs):
            pages = [self._given(docs, inputs, i) for i in idx]
            out.append(ModelBatch(idx, pages, collate(pages)))
        return out

    def forward(self, docs: Sequence[Document], batches: Sequence[ModelBatch]) -> list[np.ndarray]:
        """P(body) for every block of every page (an empty array for a page with no block); touches only torch."""
        result: list[np.ndarray] = [np.zeros(0, np.float32)] * len(docs)
        for b in batches:
            batch = b.collated
            if batch is None:  # a frozen encoder: its vectors come from the model's device, here
                batch = collate([self.inputs(docs[i]) for i in b.pages])
            for i, p in zip(b.pages, self._probabilities(batch), strict=True):
                result[i] = p.astype(np.float32)
        return result

    def _probabilities(self, batch: PageBatch) -> list[np.ndarray]:
        """One forward pass: the traced one for a single CPU page when it can take it, else the eager model."""
        if self.device.type != "cpu":  # (on CPU: every call here waits for the GIL on its way back)
            if self.device.type == "cuda":
                batch = batch.pin_memory()  # page-locked host memory: the copy below overlaps compute
            batch = batch.to(self.device, non_blocking=True)
        if self.single is not None and self.single.accepts(batch):
            try:
                return [self.single(batch)]
            except RuntimeError:  # the TorchScript interpreter failed on this page: the eager model decides
                pass
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            return self.model.probabilities(batch)
