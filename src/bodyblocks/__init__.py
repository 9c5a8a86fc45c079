"""bodyblocks: find the body text of web pages by classifying their text blocks.

    >>> import bodyblocks
    >>> result = bodyblocks.extract(open("page.html", "rb").read())
    >>> result.title, result.text, result.low_confidence

`extract` uses the default extractor: the shipped ensemble (checkpoints/ensemble: the block Transformer in
checkpoints/default blended with the boosted trees in checkpoints/gbt and the heuristic's vote) when
present, else the model alone. `get_extractor(name, **options)` builds any extractor once, for many pages
(`extract`, and `extract_documents` for batches of segmented pages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bodyblocks.types import Block, Document, Extraction, Page

__version__ = "0.1.0"
__all__ = ["Block", "Document", "Extraction", "Page", "__version__", "extract", "get_extractor"]

if TYPE_CHECKING:
    from bodyblocks.inference.registry import Extractor

_DEFAULT: Any = None


def get_extractor(name: str | None = None, **options: Any) -> Extractor:
    """Build an extractor by name (None: the default one); see bodyblocks.inference.registry.

    Args:
        name: "ensemble", "model", "gbt", "heuristic", "density", ..., or a peer such as "trafilatura".
        options: for the trained extractors, checkpoint=, device=, threshold=, batch_size=, threads=, ...
    """
    from bodyblocks.inference.registry import get_extractor as build  # imported when first used (lxml, NumPy)

    return build(name, **options)


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
        _DEFAULT = get_extractor()
    return _DEFAULT.extract(html, url=url)
