"""bodyblocks: find the body text of web pages by classifying their text blocks.

    >>> import bodyblocks
    >>> result = bodyblocks.extract(open("page.html", "rb").read())
    >>> result.title, result.text, result.low_confidence

`extract` uses the default extractor: the shipped ensemble (checkpoints/ensemble: the block Transformer in
checkpoints/default blended with the boosted trees in checkpoints/gbt and the heuristic's vote) when
present, else the model alone.
`Extractor` (predict.ModelExtractor) loads a model checkpoint once and takes batches; the ensemble's
extractor, `bodyblocks.ensemble.EnsembleExtractor`, takes the same options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bodyblocks.types import Block, Document, Extraction, Page

__version__ = "0.1.0"
__all__ = ["Block", "Document", "Extraction", "Extractor", "Page", "__version__", "extract"]

if TYPE_CHECKING:
    from bodyblocks.predict import ModelExtractor as Extractor

_DEFAULT: Any = None


def extract(html: str | bytes, url: str | None = None) -> Extraction:
    """Extract the title and body text of one page with the default extractor.

    Args:
        html: the page as bytes (any charset; gzip is read transparently) or as text.
        url: the page's address, when known.
    Returns:
        Extraction: title, body text, blocks with probabilities, encoding, confidence, low-confidence flag.
    Raises:
        bodyblocks.errors.InputError: empty, binary or undecodable input.
    """
    global _DEFAULT
    if _DEFAULT is None:
        from bodyblocks.extractors import get_extractor
        from bodyblocks.predict import default_extractor_name

        _DEFAULT = get_extractor(default_extractor_name())
    return _DEFAULT.extract(html, url=url)


def __getattr__(name: str) -> Any:
    if name == "Extractor":  # imported lazily: it pulls in torch
        from bodyblocks.predict import ModelExtractor

        return ModelExtractor
    raise AttributeError(f"module 'bodyblocks' has no attribute {name!r}")
