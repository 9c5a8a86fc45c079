"""The decision rule every block extractor shares: which blocks of a page are body, and how sure we are.

    rule = DecisionRule.from_meta(checkpoint_meta)          # the tuned values, or those given by hand
    extraction = rule.decide(doc, probs, name="ensemble")

  1. threshold: a block is body when P(body) >= threshold (tuned on validation: training/tune.py);
  2. rescue: on a page where no block reaches the threshold, the blocks at or above `rescue` are kept
     (None, or rescue >= threshold: no rescue);
  3. low confidence: a page whose best block stays under `confident` is flagged low_confidence;
  4. no body: a page where nothing is kept comes back empty with no_body=True, never as navigation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bodyblocks.types import Document, Extraction

DEFAULT_THRESHOLD = 0.5  # of a checkpoint that records none


def keep_mask(probs: np.ndarray, threshold: float, rescue: float | None = None) -> np.ndarray:
    """Blocks kept by steps 1-2: P(body) >= threshold, or, on a page where none is, >= rescue."""
    keep = probs >= threshold
    if not keep.any() and rescue is not None and rescue < threshold:
        keep = probs >= rescue
    return keep


@dataclass(frozen=True)
class DecisionRule:
    """Threshold, low-confidence level and rescue threshold of a block extractor (module docstring)."""

    threshold: float
    confident: float
    rescue: float | None = None

    def __post_init__(self) -> None:
        values = [self.threshold, self.confident] + ([] if self.rescue is None else [self.rescue])
        if not all(isinstance(v, int | float) and 0.0 <= v <= 1.0 for v in values):  # NaN fails both
            raise ValueError(f"decision rule: threshold, confident and rescue must be numbers in [0, 1], got "
                             f"{self.threshold!r}, {self.confident!r}, {self.rescue!r}")

    @classmethod
    def resolve(cls, tuned_threshold: float, tuned_confident: float | None, tuned_rescue: float | None,
                threshold: float | None = None, confident: float | None = None,
                rescue: float | None = None) -> DecisionRule:
        """The values given, else the tuned ones.

        `confident` defaults to the threshold in use when nothing was tuned for it. The tuned rescue belongs
        to the tuned threshold: a threshold given by hand turns it off unless a rescue is given too.
        """
        t = float(threshold if threshold is not None else tuned_threshold)
        c = float(confident if confident is not None else (tuned_confident if tuned_confident is not None else t))
        tuned = tuned_rescue if threshold is None else None
        return cls(t, c, rescue if rescue is not None else (float(tuned) if tuned is not None else None))

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], threshold: float | None = None, confident: float | None = None,
                  rescue: float | None = None) -> DecisionRule:
        """`resolve` from a checkpoint's config.json (its keys threshold, confident, rescue)."""
        return cls.resolve(meta.get("threshold", DEFAULT_THRESHOLD), meta.get("confident"), meta.get("rescue"),
                           threshold, confident, rescue)

    def keep(self, probs: np.ndarray) -> np.ndarray:
        """Steps 1-2: the kept blocks as a boolean mask."""
        return keep_mask(probs, self.threshold, self.rescue)

    def decide(self, doc: Document, probs: np.ndarray, name: str) -> Extraction:
        """Steps 1-4 on one page: its Extraction by the extractor called `name`."""
        kept = [int(i) for i in np.flatnonzero(self.keep(probs))]
        top = float(probs.max()) if len(probs) else 0.0
        return Extraction(
            text="\n".join(doc.blocks[i].text for i in kept), title=doc.title, extractor=name,
            encoding=doc.encoding, blocks=doc.blocks, probabilities=[float(x) for x in probs], kept=kept,
            confidence=float(np.mean(probs[kept])) if kept else top, low_confidence=top < self.confident,
            no_body=not kept, replaced=doc.replaced, truncated=doc.truncated,
        )
