"""The blend of a block extractor's parts: per block, P(body) = w * P_model + h * vote + (1 - w - h) * P_trees.

    blend = Blend(0.2, 0.2)                        # the model's weight w, the heuristic's vote's h
    probs = blend(model_probs, tree_probs, votes)  # per page, float32

The model alone is w = 1, the trees alone w = 0; the vote (extraction/vote.py) is a block's 1 or 0. The weights
are tuned on validation (training/tune.py) and read from an ensemble's config.json (loading/checkpoints.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Blend:
    """Weights of the parts in P(body): `model` (w), the heuristic's `vote` (h), the trees the rest."""

    model: float = 1.0
    vote: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 <= self.model and 0.0 <= self.vote and self.model + self.vote <= 1.0 + 1e-9):
            raise ValueError("blend weights must be >= 0 with model + vote <= 1")

    @property
    def gbt(self) -> float:
        """The trees' weight, 1 - w - h."""
        return 1.0 - self.model - self.vote

    def __call__(self, model: Sequence[np.ndarray] | None, gbt: Sequence[np.ndarray] | None,
                 vote: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Per page, w * model + h * vote + (1 - w - h) * gbt (float32); a part alone is returned as it is."""
        if gbt is None or model is None:
            only = model if gbt is None else gbt
            assert only is not None, "a blend needs the model or the trees"
            return list(only)
        if vote is None or not self.vote:
            return [(self.model * a + self.gbt * b).astype(np.float32) for a, b in zip(model, gbt, strict=True)]
        return [(self.model * a + self.vote * v + self.gbt * b).astype(np.float32)
                for a, b, v in zip(model, gbt, vote, strict=True)]
