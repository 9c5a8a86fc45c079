"""Every extractor behind one interface, selectable by name: `get_extractor(name).extract(html, url)`.

Names: density, heuristic, scorer, regex, longest (baselines/), trafilatura, readability, gne (peers,
the optional extra `peers`), model (the block classifier, imported lazily from bodyblocks.predict), gbt
(the boosted-tree baseline, lazily from bodyblocks.gbt) and ensemble (the two blended with the heuristic's
vote, bodyblocks.ensemble).
An extractor raises an InputError subclass for input it cannot read (empty, binary, corrupt) and returns
an Extraction otherwise.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from bodyblocks.baselines import (
    DensityExtractor,
    GneExtractor,
    HeuristicExtractor,
    LongestExtractor,
    ReadabilityExtractor,
    RegexExtractor,
    ScorerExtractor,
    TrafilaturaExtractor,
)
from bodyblocks.baselines.peers import peer_installed
from bodyblocks.types import Extraction


@runtime_checkable
class Extractor(Protocol):
    """Anything with a name that turns a page's HTML (text or bytes) into an Extraction."""

    name: str

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Body text (one paragraph per line) and title of one page."""
        ...


def _model(**opts: Any) -> Extractor:
    """The trained block classifier; imported only when asked for (it pulls in torch)."""
    from bodyblocks.predict import ModelExtractor

    return ModelExtractor(**opts)


def _ensemble(**opts: Any) -> Extractor:
    """The model, the boosted trees and the heuristic's vote blended (bodyblocks.ensemble), imported only when asked."""
    from bodyblocks.ensemble import EnsembleExtractor

    return EnsembleExtractor(**opts)


def _gbt(**opts: Any) -> Extractor:
    """The boosted-tree baseline (bodyblocks.gbt), imported only when asked for."""
    from bodyblocks.gbt import GbtExtractor

    return GbtExtractor(**opts)


BASELINES: dict[str, Callable[..., Extractor]] = {
    "density": DensityExtractor,
    "heuristic": HeuristicExtractor,
    "scorer": ScorerExtractor,
    "regex": RegexExtractor,
    "longest": LongestExtractor,
}
PEERS: dict[str, Callable[..., Extractor]] = {
    "trafilatura": TrafilaturaExtractor,
    "readability": ReadabilityExtractor,
    "gne": GneExtractor,
}
TRAINED: tuple[str, ...] = ("model", "gbt", "ensemble")  # built from a checkpoint (`checkpoint=`)
TORCH: tuple[str, ...] = ("model", "ensemble")  # run the block Transformer: device, threads, batches
NAMES: tuple[str, ...] = (*BASELINES, *PEERS, *TRAINED)


def available_extractors() -> list[str]:
    """Names that can be built here: baselines always, peers when installed, the trained ones when predict exists
    (they still need their checkpoints)."""
    names = list(BASELINES)
    names += [n for n in PEERS if peer_installed(n)]
    if importlib.util.find_spec("bodyblocks.predict") is not None:
        names += TRAINED
    return names


def get_extractor(name: str, **opts: Any) -> Extractor:
    """Build the extractor called `name`; opts go to its constructor (e.g. checkpoint= for model).

    Raises:
        ValueError: unknown name.
        ImportError: a peer (or the model's dependencies) is not installed.
    """
    if name == "model":
        return _model(**opts)
    if name == "gbt":
        return _gbt(**opts)
    if name == "ensemble":
        return _ensemble(**opts)
    if name in PEERS and not peer_installed(name):
        raise ImportError(f"extractor {name!r} needs the optional extra: pip install 'bodyblocks[peers]'")
    factory = BASELINES.get(name) or PEERS.get(name)
    if factory is None:
        raise ValueError(f"unknown extractor {name!r}; choose from {', '.join(NAMES)}")
    return factory(**opts)
