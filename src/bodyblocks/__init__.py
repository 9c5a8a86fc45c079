"""bodyblocks: find the body text of web pages by classifying their text blocks.

    >>> import bodyblocks
    >>> from pathlib import Path
    >>> result = bodyblocks.extract(Path("page.html"))       # or the page's bytes, or its HTML as a str
    >>> result.title, result.text, result.low_confidence

`extract` uses the default extractor: $BODYBLOCKS_MODEL's checkpoint folder when set, else the accurate preset
where CUDA can run it, else the shipped ensemble (the block Transformer blended with the boosted trees, and the
heuristic's vote where a blend weighs it; the checkpoints are package data), as bodyblocks.loading.plan works it out.
`load(folder_or_name)` builds the extractor a checkpoint folder describes, and
`get_extractor(name, **options)` any extractor by name, once, for many pages. A model that is not there is
a ModelNotFound error, never a silent fallback to a rule-based extractor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bodyblocks.loading.options import ExtractOptions
from bodyblocks.types import Block, Document, Extraction, Page
from bodyblocks.version import __version__

__all__ = ["Block", "Document", "ExtractOptions", "Extraction", "Page", "__version__", "extract", "get_extractor",
           "load"]

if TYPE_CHECKING:
    import os

    from bodyblocks.extraction.extractor import BlockExtractor
    from bodyblocks.loading.registry import Extractor

_DEFAULT: Any = None


def get_extractor(name: str | None = None, options: ExtractOptions | None = None, **changes: Any) -> Extractor:
    """Build an extractor by name (None: the default one); see bodyblocks.loading.registry.

    Args:
        name: "ensemble", "model", "gbt", "heuristic", "density", ..., or a peer such as "trafilatura".
        options: for the trained extractors, how they run: ExtractOptions(checkpoint=, device=, engine=,
            threshold=, batch_size=, threads=, vote=, fallback=, ...).
        changes: those fields by keyword instead (get_extractor("ensemble", device="cuda")).
    """
    if name is None:
        return load(None, options, **changes)
    from bodyblocks.loading.registry import get_extractor as build  # imported when first used (lxml, NumPy)

    return build(name, options, **changes)


def load(model: str | os.PathLike[str] | None = None, options: ExtractOptions | None = None,
         **changes: Any) -> BlockExtractor:
    """The extractor a checkpoint folder describes (its config.json says model, gbt or ensemble).

    Args:
        model: a checkpoint folder, or "ensemble" / "model" / "gbt" / a preset ("fast") for the shipped ones;
            None: options.checkpoint, else $BODYBLOCKS_MODEL when set, else the accurate preset where CUDA can
            run it, else the shipped ensemble.
        options: how it runs (ExtractOptions: device, engine, threshold, threads, batch_size, fallback, vote, ...).
        changes: those fields by keyword instead (load("fast", device="cpu")).
    Raises:
        bodyblocks.errors.ModelNotFound: no checkpoint there (the message says what to do).
        ValueError: an option out of range.
    """
    from bodyblocks.loading.plan import load as load_planned

    return load_planned(model, options, **changes)


def extract(page: str | bytes | os.PathLike[str], url: str | None = None) -> Extraction:
    """Extract the title and body text of one page with the default extractor (built once, then kept).

    Args:
        page: the page's bytes (any charset; gzip is read transparently), its HTML as a str, or a path-like
            (pathlib.Path) to read it from. A str that names a file is refused: pass a Path.
        url: the page's address, when known.
    Returns:
        Extraction: title, body text, blocks with probabilities, encoding, confidence, low-confidence flag.
    Raises:
        bodyblocks.errors.InputError: empty, binary or undecodable input, or a file name given as a str.
        bodyblocks.errors.ModelNotFound: the default model is not there.
    """
    from bodyblocks.page.decode import page_source

    global _DEFAULT
    html = page_source(page)
    if _DEFAULT is None:
        _DEFAULT = get_extractor()
    return _DEFAULT.extract_html(html, url=url)
