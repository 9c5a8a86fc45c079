"""Baseline extractors: GNE-style density, the eight-step heuristic pipeline, the scorer, naive ones, peers.

Each is a class with a `name` and `extract(html, url=None) -> Extraction`; select them by name through
`bodyblocks.loading.registry.get_extractor`.
"""

from bodyblocks.baselines.density import DensityExtractor
from bodyblocks.baselines.heuristic import HeuristicExtractor
from bodyblocks.baselines.naive import LongestExtractor, RegexExtractor
from bodyblocks.baselines.peers import GneExtractor, PeerError, ReadabilityExtractor, TrafilaturaExtractor
from bodyblocks.baselines.scorer import ScorerExtractor

__all__ = [
    "DensityExtractor",
    "GneExtractor",
    "HeuristicExtractor",
    "LongestExtractor",
    "PeerError",
    "ReadabilityExtractor",
    "RegexExtractor",
    "ScorerExtractor",
    "TrafilaturaExtractor",
]
