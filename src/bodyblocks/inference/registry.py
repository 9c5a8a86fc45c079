"""Every extractor behind one interface, selectable by name: `get_extractor(name).extract(html, url)`.

Names: density, heuristic, scorer, regex, longest (baselines/), trafilatura, readability, gne (peers,
the optional extra `peers`), and the block extractors built from checkpoints (inference/checkpoints.py):
model (the block Transformer), gbt (the boosted trees) and ensemble (the two blended with the heuristic's
vote, the default). An extractor raises an InputError subclass for input it cannot read (empty, binary,
corrupt) and returns an Extraction otherwise.
"""

from __future__ import annotations

import os
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
from bodyblocks.inference.checkpoints import ENSEMBLE, ENV_MODEL, KINDS, MODEL, kind_of, load, load_extractor, resolve
from bodyblocks.types import Extraction


@runtime_checkable
class Extractor(Protocol):
    """Anything with a name that turns a page's HTML (text or bytes) into an Extraction."""

    name: str

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Body text (one paragraph per line) and title of one page."""
        ...


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
TRAINED: tuple[str, ...] = KINDS  # built from a checkpoint (`checkpoint=`)
TORCH: tuple[str, ...] = (MODEL, ENSEMBLE)  # run the block Transformer: device, threads, batches
NAMES: tuple[str, ...] = (*BASELINES, *PEERS, *TRAINED)


def extractor_names() -> list[str]:
    """Every name get_extractor knows, installed or not (NAMES, and any registered since)."""
    return [*BASELINES, *PEERS, *TRAINED]


def available_extractors() -> list[str]:
    """Names that can be built here: baselines always, peers when installed, the trained ones (they still
    need their checkpoints)."""
    return [*BASELINES, *(n for n in PEERS if peer_installed(n)), *TRAINED]


def default_extractor_name() -> str:
    """The extractor that `get_extractor()` builds: the kind of the folder $BODYBLOCKS_MODEL names when set,
    else "ensemble" (the model, the boosted trees and the heuristic's vote, shipped with the package).
    Nothing falls back to a rule-based extractor when a model is missing: loading it raises ModelNotFound."""
    return kind_of(resolve(None)) if os.environ.get(ENV_MODEL) else ENSEMBLE


def get_extractor(name: str | None = None, **opts: Any) -> Extractor:
    """Build the extractor called `name` (None: the default, checkpoints.load()); opts go to its constructor
    (for model, gbt and ensemble: checkpoints.load_extractor's, e.g. checkpoint=, device=, threshold=).

    Raises:
        ModelNotFound: a trained extractor whose checkpoint is not there.
        ValueError: unknown name.
        ImportError: a peer (or the model's dependencies) is not installed.
    """
    if name is None:
        return load(opts.pop("checkpoint", None), **opts)
    if name in TRAINED:
        return load_extractor(name, **opts)
    if name in PEERS and not peer_installed(name):
        raise ImportError(f"extractor {name!r} needs the optional extra: pip install 'bodyblocks[peers]'")
    factory = BASELINES.get(name) or PEERS.get(name)
    if factory is None:
        raise ValueError(f"unknown extractor {name!r}; choose from {', '.join(extractor_names())}")
    return factory(**opts)
