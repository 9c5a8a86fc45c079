"""Every extractor behind one interface, selectable by name: `get_extractor(name).extract(html, url)`.

Names: density, heuristic, scorer, regex, longest (baselines/), trafilatura, readability, gne (peers,
the optional extra `peers`), and the block extractors built from checkpoints (loading/checkpoints.py):
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
from bodyblocks.loading.checkpoints import ENSEMBLE, ENV_MODEL, KINDS, MODEL, kind_of, load_extractor, resolve
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.runtime.extras import install_command
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


def default_extractor_name(checkpoint: str | os.PathLike[str] | None = None) -> str:
    """The extractor that `bodyblocks.get_extractor()` builds, the one default of the library, the batch runner
    (BatchOptions) and the command line: the kind of `checkpoint`'s folder when one is named, else of the
    folder $BODYBLOCKS_MODEL names when set, else "ensemble" (the model and the boosted trees, with the
    heuristic's vote where the blend weighs it, shipped with the package). Nothing falls back to a rule-based
    extractor when a model is missing: loading it raises ModelNotFound."""
    return kind_of(resolve(checkpoint)) if checkpoint or os.environ.get(ENV_MODEL) else ENSEMBLE


def get_extractor(name: str, options: ExtractOptions | None = None, **opts: Any) -> Extractor:
    """Build the extractor called `name` (the default one, with its checkpoint and engine worked out:
    loading/plan.py's `load`).

    Args:
        name: an extractor's name (NAMES); a trained one's checkpoint is options.checkpoint, else its shipped one.
        options: for model, gbt and ensemble, how they run (device, engine, threshold, ...; loading/options.py).
        opts: for those, ExtractOptions' fields by keyword (checkpoint=, device=, threshold=, ...); for the others,
            their constructor's arguments.
    Raises:
        ModelNotFound: a trained extractor whose checkpoint is not there.
        ValueError: unknown name; options for an extractor that takes none.
        ImportError: a peer (or the model's dependencies) is not installed.
    """
    if name in TRAINED:
        return load_extractor(name, options=options, **opts)
    if options is not None:
        raise ValueError(f"extractor {name!r} takes no ExtractOptions (they are for {', '.join(TRAINED)})")
    if name in PEERS and not peer_installed(name):
        raise ImportError(f"extractor {name!r} needs the optional extra: {install_command('peers')}")
    factory = BASELINES.get(name) or PEERS.get(name)
    if factory is None:
        raise ValueError(f"unknown extractor {name!r}; choose from {', '.join(extractor_names())}")
    return factory(**opts)
