"""bodyblocks as a datatrove pipeline step: the extractor in place of datatrove's Trafilatura step.

    from datatrove.pipeline.readers import WarcReader
    from bodyblocks.scale.datatrove_step import BodyblocksExtractor

    pipeline = [WarcReader("crawl/"), BodyblocksExtractor(), ...]   # then datatrove's filters and writers

A document's text (the HTML datatrove's reader decoded) becomes its body text; a document with none is dropped,
as datatrove's extractors do. datatrove runs each extraction in a sandboxed child process under `timeout`
seconds; the extractor is built there once, on its warm-up call.
"""

from __future__ import annotations

from typing import Any

from bodyblocks.errors import InputError
from bodyblocks.inference.registry import get_extractor
from bodyblocks.runtime.extras import require

BaseExtractor = require("datatrove.pipeline.extractors.base", "the datatrove step").BaseExtractor


class BodyblocksExtractor(BaseExtractor):  # type: ignore[misc, valid-type]
    """A datatrove extractor step running a bodyblocks extractor (default: the shipped ensemble)."""

    name = "⛏ bodyblocks"

    def __init__(self, extractor: str = "ensemble", timeout: float = 5.0, **extractor_opts: Any) -> None:
        """
        Args:
            extractor: a bodyblocks extractor name (inference/registry.py).
            timeout: seconds per document (datatrove's sandbox), the extractor's loading aside.
            extractor_opts: options of get_extractor (checkpoint=, vote=, threads=, ...).
        """
        super().__init__(timeout=timeout)
        self.extractor_name, self.extractor_opts = extractor, extractor_opts
        self._extractor: Any = None

    def extract(self, text: str) -> str:
        """The body text of one page's HTML ("" for a page with none, or that is no page)."""
        if self._extractor is None:  # in datatrove's sandbox process, on its warm-up call
            self._extractor = get_extractor(self.extractor_name, **self.extractor_opts)
        if not text or not text.strip():
            return ""
        try:
            return self._extractor.extract(text).text
        except InputError:  # empty, binary: nothing to keep
            return ""
