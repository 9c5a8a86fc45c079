"""The decision rule with some of its steps off: what loso_blend's and role_ablation's ablations score.

    rule = ablated(DecisionRule.from_meta(meta), sidebars=False)   # every step but the sidebar step

The shipped rule (bodyblocks.extraction.decision.DecisionRule) always runs every step; AblatedRule overrides the
parts of it that a benchmark turns off, one switch each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bodyblocks.extraction import kinds
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.types import Block, Document, Extraction


@dataclass(frozen=True)
class AblatedRule(DecisionRule):
    """DecisionRule whose steps can be turned off (each True: as shipped)."""

    captions: bool = True  # step 7: captions and photo credits out of the body, into Extraction.captions
    repeated_posts: bool = True  # step 5: a thread of posts repeated outside comment containers
    comment_headings: bool = True  # step 5: a section under a comments heading is a comment container
    role_rescue: bool = True  # step 11: the rescue after the roles
    sidebars: bool = True  # step 7: a sidebar's widgets out of the body
    key_points: bool = True  # step 7: a story's key points box out of the body

    def decide(self, doc: Document, probs: np.ndarray, name: str) -> Extraction:
        return super().decide(doc, probs, name) if self.role_rescue else self._decide(doc, probs, name)

    def _thread_posts(self, doc: Document, probs: np.ndarray, keep: np.ndarray, comments: np.ndarray,
                      outside: int, inside: int) -> np.ndarray | None:
        if self.repeated_posts:
            return super()._thread_posts(doc, probs, keep, comments, outside, inside)
        return kinds.container_posts(doc, probs, keep, comments, outside, inside)

    def _comment_sections(self, blocks: Sequence[Block], keep: np.ndarray) -> np.ndarray:
        if self.comment_headings:
            return super()._comment_sections(blocks, keep)
        return np.zeros(len(blocks), bool)

    def _key_points(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray) -> np.ndarray:
        return super()._key_points(blocks, keep, chars) if self.key_points else np.zeros(len(blocks), bool)

    def _sidebar(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray) -> np.ndarray:
        return super()._sidebar(blocks, keep, chars) if self.sidebars else np.zeros(len(blocks), bool)

    def _captions(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray, head: int | None) -> list[int]:
        return super()._captions(blocks, keep, chars, head) if self.captions else []


_SHIPPED = {f.name for f in dataclasses.fields(DecisionRule)}
STEPS = tuple(f.name for f in dataclasses.fields(AblatedRule) if f.name not in _SHIPPED)  # the switches


def ablated(rule: DecisionRule, **steps: Any) -> AblatedRule:
    """`rule` with the steps named turned on or off (`captions=False`), its other settings and switches kept."""
    if unknown := sorted(set(steps) - set(STEPS)):
        raise ValueError(f"no such step: {', '.join(unknown)} (one of {', '.join(STEPS)})")
    current = {f.name: getattr(rule, f.name) for f in dataclasses.fields(rule)}
    return AblatedRule(**{**current, **steps})
