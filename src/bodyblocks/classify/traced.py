"""The block classifier's forward pass for one unpadded page, compiled by TorchScript's tracer (CPU).

    single = trace_single_page(model)          # None when it cannot be traced or disagrees with the model
    if single is not None and single.accepts(batch):
        probs = single(batch)                  # as model.probabilities(batch)[0]

Why: eager PyTorch takes the GIL back after every operator (about fifty per page). While the batch runner's
main thread parses the next pages, every one of those waits for that thread to let go of the GIL: beside a
busy Python thread a page's forward pass took 42.4 ms instead of 19.6 with one torch thread. The traced
pieces run in C++ with the GIL released once each: 24.7 ms beside the same thread
(profile_stages, retired: CHANGELOG.md). They are the model's own code (embed_blocks and _place; the Transformer and
head), traced; the windows of a long page are cut and averaged by the model's _contextualise as in
`forward`. Used only when they give the same probabilities as the eager model on probe pages (the tracer is
deprecated in recent PyTorch and may one day be gone: then None, and eager).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import fields
from typing import Any

import numpy as np
import torch
from torch import nn

from bodyblocks.classify.model import BlockClassifier, PageBatch, PageInputs, collate, prepare_page
from bodyblocks.config import ModelConfig
from bodyblocks.types import Block

_log = logging.getLogger(__name__)
_BATCH_FIELDS = tuple(f.name for f in fields(PageBatch) if f.name not in ("mask", "labels"))  # the inputs


class _Embed(nn.Module):
    """One unpadded page's tensors -> (1, T, d): the model's embed_blocks and _place, for the tracer."""

    def __init__(self, model: BlockClassifier, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        parts = dict(zip(self.names, tensors, strict=True))
        mask = torch.ones((1, parts["features"].shape[0]), dtype=torch.bool, device=parts["features"].device)
        return self.model._place(self.model.embed_blocks(PageBatch(mask=mask, **parts)), mask)


class _Context(nn.Module):
    """(b, w, d) unpadded windows -> (b, w, 2) logits: the model's _head_over_context, for the tracer."""

    def __init__(self, model: BlockClassifier) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model._head_over_context(x, torch.ones(x.shape[:2], dtype=torch.bool, device=x.device))


class SinglePage:
    """P(body) of one page's blocks through the traced pieces of the forward pass (trace_single_page):
    the embedding, then the Transformer and head over the page or, past the window, over each window (the
    windows cut and averaged by the model's own _contextualise)."""

    def __init__(self, model: BlockClassifier, embed: Any, context: Any, names: tuple[str, ...]) -> None:
        self.model, self.embed, self.context, self.names = model, embed, context, names

    def accepts(self, batch: PageBatch) -> bool:
        """One page with blocks (no padding), with the fields the traces were made with."""
        return (batch.mask.shape[0] == 1 and batch.mask.shape[1] == batch.features.shape[0] > 0
                and tuple(f for f in _BATCH_FIELDS if getattr(batch, f) is not None) == self.names)

    def __call__(self, batch: PageBatch) -> np.ndarray:
        with torch.inference_mode():
            x = self.embed(*(getattr(batch, f) for f in self.names))
            logits = self.model._contextualise(x, batch.mask, lambda xs, _: self.context(xs))[0]
            return torch.softmax(logits.float(), dim=-1)[:, 1].numpy()

    @classmethod
    def build(cls, model: BlockClassifier) -> SinglePage | None:
        """Trace the model's pieces and check them on probe pages; None when either fails (module docstring)."""
        if model.training or model.context is None or next(model.parameters()).device.type != "cpu":
            return None
        rng = np.random.default_rng(0)
        # traced at 16 blocks; checked on a page of one block, a short one and one past the window
        lengths = (16, 1, 37, model.cfg.window + model.cfg.stride // 2 + 5)
        probes = [collate([_probe_page(model.cfg, n, rng)]) for n in lengths]
        names = tuple(f for f in _BATCH_FIELDS if getattr(probes[0], f) is not None)
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # the tracer's deprecation and tracer warnings
                args = tuple(getattr(probes[0], f) for f in names)
                embed = torch.jit.trace(_Embed(model, names), args, check_trace=False)
                context = torch.jit.trace(_Context(model), embed(*args), check_trace=False)
            single = cls(model, embed, context, names)
            for b in probes:
                if not np.allclose(single(b), model.probabilities(b)[0], rtol=0, atol=1e-5):
                    _log.warning("traced forward pass differs from the model on a %d-block probe page: eager "
                                 "forward passes (slower beside a parsing thread)", b.features.shape[0])
                    return None
        except Exception as exc:  # noqa: BLE001 - no tracer, or one that cannot follow this model: eager it is
            _log.warning("no traced forward pass (%s: %s): eager forward passes (slower beside a parsing "
                         "thread)", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            return None
        return single


def trace_single_page(model: BlockClassifier) -> SinglePage | None:
    """The model's traced one-page forward pass, or None (eager forward passes then; module docstring)."""
    return SinglePage.build(model)


_PROBE_WORDS = ("home", "news", "relief", "convoys", "reached", "the", "valley", "河流", "救援", "2026", "»")


def _probe_page(cfg: ModelConfig, n: int, rng: np.random.Generator) -> PageInputs:
    """prepare_page's inputs for a random n-block page (for SinglePage's check)."""
    blocks = []
    for i in range(n):
        text = " ".join(rng.choice(_PROBE_WORDS, int(rng.integers(1, 12))))
        tag = ("p", "a", "h2", "li", "td")[int(rng.integers(5))]
        blocks.append(Block(index=i, text=text, tag=tag, tag_path=f"html/body/div.c{int(rng.integers(9))}/{tag}",
                            xpath=f"/html[1]/body[1]/div[{i + 1}]", depth=3, text_len=len(text.replace(" ", "")),
                            link_density=float(rng.random()), heading_level=2 * (tag == "h2")))
    vectors = rng.normal(size=(n, cfg.encoder.dim)).astype(np.float32) if cfg.encoder.frozen else None
    return prepare_page(blocks, cfg, text_vectors=vectors if cfg.use_text else None)
