"""bodyblocks over a Hugging Face dataset (`datasets.map`), and the page fields the corpus steps carry.

    from datasets import load_dataset
    from bodyblocks.scale.hf_map import BodyblocksMap

    ds = load_dataset("json", data_files="pages.jsonl", split="train")      # a column "html" (str or bytes), "url"
    fn = BodyblocksMap()
    ds = ds.map(fn, batched=True, batch_size=64, num_proc=4, features=fn.features(ds.features))  # + text, title, ...

`page_fields(ex)` is what a page's extraction adds beside its text (FIELDS); the datatrove step
(datatrove_step.py) puts the same fields in a document's metadata. `BodyblocksMap` needs no `datasets` import of
its own: it is a plain callable on a batch (a dict of columns), built once per process and pickled without its
extractor, so `num_proc` workers each load the model once and `datasets` can hash it for its cache. Pass
`features=fn.features(ds.features)`: `datasets` otherwise types a column from its first batch, and a first batch
whose pages all lack a value (no `<html lang>`, say) would make the column null-typed and the next batch fail.
"""

from __future__ import annotations

from typing import Any

from bodyblocks.errors import InputError
from bodyblocks.loading.registry import get_extractor
from bodyblocks.runtime.extras import require
from bodyblocks.types import Extraction

# what a page's extraction adds beside its text: the headline, what the page declares (language, author, site,
# canonical address; the publication date as `published`, since datatrove's WarcReader keeps the crawl's date as
# `date`), how sure the decision rule is, and its page flags: no body text, an error or "not found" page
FIELDS = ("title", "language", "confidence", "low_confidence", "no_body", "error_page", "author", "published",
          "site_name", "canonical_url")

# the Arrow type of each field and of `error` (BodyblocksMap.features; the text column is a string)
TYPES = {"title": "string", "language": "string", "confidence": "float64", "low_confidence": "bool",
         "no_body": "bool", "error_page": "bool", "author": "string", "published": "string", "site_name": "string",
         "canonical_url": "string", "error": "string"}


def page_fields(ex: Extraction) -> dict[str, Any]:
    """The FIELDS of one page's extraction (None where the page states nothing)."""
    return {"title": ex.title, "language": ex.language, "confidence": ex.confidence,
            "low_confidence": ex.low_confidence, "no_body": ex.no_body, "error_page": ex.error_page,
            "author": ex.author, "published": ex.date, "site_name": ex.site_name, "canonical_url": ex.canonical_url}


def unreadable_fields(reason: str) -> dict[str, Any]:
    """The FIELDS of a page that cannot be read (empty, binary, not markup), with `error` saying why."""
    return {**dict.fromkeys(FIELDS), "title": "", "low_confidence": True, "no_body": True, "error_page": False,
            "error": reason}


class PageExtractor:
    """One page's HTML -> (its body text, page_fields); the extractor is built on the first page and not pickled."""

    def __init__(self, extractor: str = "ensemble", **extractor_opts: Any) -> None:
        """
        Args:
            extractor: a bodyblocks extractor name (loading/registry.py).
            extractor_opts: options of get_extractor (checkpoint=, vote=, threads=, ...).
        """
        self.extractor_name, self.extractor_opts = extractor, extractor_opts
        self._extractor: Any = None

    def load(self) -> Any:
        """The extractor, built once per process."""
        if self._extractor is None:
            self._extractor = get_extractor(self.extractor_name, **self.extractor_opts)
        return self._extractor

    def page(self, html: str | bytes | None, url: str | None = None) -> tuple[str, dict[str, Any]]:
        """The body text and fields of one page: its HTML as str or bytes (any charset), its address if known."""
        extractor = self.load()
        if html is None or not html.strip():
            return "", unreadable_fields("empty: the page has no content")
        try:
            ex = extractor.extract(html, url=url)
        except InputError as exc:  # binary, a str that reads as a path, too large: nothing to keep, the batch goes on
            return "", unreadable_fields(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return ex.text, page_fields(ex)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_extractor": None}  # each process builds its own (ONNX sessions do not pickle)


class BodyblocksMap(PageExtractor):
    """A `datasets.map(..., batched=True)` function: each row's body text into `text_column`, FIELDS beside it."""

    def __init__(self, html_column: str = "html", url_column: str | None = "url", text_column: str = "text",
                 extractor: str = "ensemble", **extractor_opts: Any) -> None:
        """
        Args:
            html_column: the column holding each page's HTML (str, or bytes in any charset).
            url_column: the column holding its address (canonical links are resolved against it); None or a
                column the dataset lacks: no address.
            text_column: the column the body text goes into ("" for a page with none); FIELDS go beside it, and
                `error` (None, or why the page could not be read or failed: that row only).
        """
        super().__init__(extractor, **extractor_opts)
        self.html_column, self.url_column, self.text_column = html_column, url_column, text_column

    def features(self, features: Any = None) -> Any:
        """`datasets.Features` of the mapped dataset: the input's `features` (a Dataset's .features), then the
        text column and the FIELDS and `error`, typed (TYPES) so that a batch of None values cannot untype them."""
        datasets = require("datasets", "BodyblocksMap.features")
        added = {self.text_column: "string", **{f: TYPES[f] for f in FIELDS}, "error": TYPES["error"]}
        return datasets.Features({**(features or {}), **{k: datasets.Value(t) for k, t in added.items()}})

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """A batch of rows (a dict of columns) -> the new columns, one value per row."""
        if self.html_column not in batch:
            raise KeyError(f"BodyblocksMap: no column {self.html_column!r} (columns: {', '.join(batch)}); "
                           f"name the HTML column with html_column=")
        pages = batch[self.html_column]
        urls = batch.get(self.url_column, [None] * len(pages)) if self.url_column else [None] * len(pages)
        out: dict[str, list[Any]] = {self.text_column: [], **{f: [] for f in FIELDS}, "error": []}
        for html, url in zip(pages, urls, strict=True):
            try:
                text, fields = self.page(html, url)
            except Exception as exc:  # noqa: BLE001 - an error on one page is that row's, never the batch's
                text, fields = "", unreadable_fields(f"{type(exc).__name__}: {exc}")
            out[self.text_column].append(text)
            for f in FIELDS:
                out[f].append(fields[f])
            out["error"].append(fields.get("error"))
        return out
