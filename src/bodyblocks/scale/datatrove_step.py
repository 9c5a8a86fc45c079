"""bodyblocks as a datatrove pipeline step: the extractor in place of datatrove's Trafilatura step.

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter
    from bodyblocks.scale.datatrove_step import BodyblocksExtractor

    LocalPipelineExecutor([WarcReader("crawl/"), BodyblocksExtractor(), JsonlWriter("out/")], tasks=4).run()

A document's text (the HTML datatrove's reader decoded) becomes its body text, and the page's fields
(hf_map.FIELDS: title, language, confidence, low_confidence, no_body, error_page, author, published, site_name,
canonical_url) go into its metadata beside the reader's (url, date). A document without body text is dropped, as
datatrove's extractors do; `keep_empty=True` keeps it (text "", no_body set; a page that cannot be read also has
`error`). datatrove runs each extraction in a child process under `timeout` seconds; that process builds the
extractor once, in its warm-up, under `load_timeout` seconds; an extractor that cannot be built (a missing
checkpoint, a bad option) stops the task on its first document with a RuntimeError saying why.
"""

from __future__ import annotations

from typing import Any

from bodyblocks.runtime.extras import require
from bodyblocks.scale.hf_map import PageExtractor

_base = require("datatrove.pipeline.extractors.base", "the datatrove step")
BaseExtractor, ExtractorSandbox = _base.BaseExtractor, _base.ExtractorSandbox
StatHints = require("datatrove.utils.typeshelper", "the datatrove step").StatHints
logger = require("datatrove.utils.logging", "the datatrove step").logger


class BodyblocksExtractor(BaseExtractor):  # type: ignore[misc, valid-type]
    """A datatrove extractor step running a bodyblocks extractor (default: the shipped ensemble)."""

    name = "⛏ bodyblocks"

    def __init__(self, extractor: str = "ensemble", timeout: float = 5.0, load_timeout: float = 120.0,
                 keep_empty: bool = False, **extractor_opts: Any) -> None:
        """
        Args:
            extractor: a bodyblocks extractor name (loading/registry.py).
            timeout: seconds per document (datatrove's sandbox); a document past it is dropped.
            load_timeout: seconds for the sandbox's process to build the extractor (and its first document).
            keep_empty: keep documents without body text (text "", metadata no_body) rather than drop them.
            extractor_opts: options of get_extractor (checkpoint=, vote=, threads=, ...).
        """
        super().__init__(timeout=timeout)
        self.load_timeout, self.keep_empty = max(load_timeout, timeout), keep_empty
        self.pages = PageExtractor(extractor, **extractor_opts)

    def extract(self, text: str, url: str | None = None) -> str:
        """The body text of one page's HTML ("" for a page with none, or that is no page)."""
        return self.pages.page(text, url)[0]

    def extract_page(self, text: str, url: str | None = None) -> tuple[str | None, dict[str, Any]] | Exception:
        """The body text and fields of one page's HTML (hf_map.PageExtractor.page); run in the sandbox. An
        extractor that cannot be built gives (None, {"load_error": why}), and an error on one page is returned,
        not raised: an exception raised here would end the sandbox's process, and datatrove would wait out the
        timeout, then start another and load the model again (on every document, for a load that fails)."""
        try:
            self.pages.load()
        except Exception as exc:  # noqa: BLE001 - a missing checkpoint, a bad option: told once, by run()
            return None, {"load_error": f"{type(exc).__name__}: {exc}"}
        try:
            return self.pages.page(text, url)
        except Exception as exc:  # noqa: BLE001 - the sandbox raises a returned exception in run(): this page only
            return RuntimeError(f"{type(exc).__name__}: {exc}")  # picklable, whatever the original held

    def run(self, data: Any, rank: int = 0, world_size: int = 1) -> Any:
        """datatrove's extractor loop (BaseExtractor.run), the page's fields carried into doc.metadata."""
        with ExtractorSandbox(timeout=self.timeout, warmup_text="") as sandbox:
            for doc in data:
                self.stat_update(StatHints.total)
                with self.track_time():
                    # a new sandbox process builds the extractor first: its first document waits for that too
                    fresh = sandbox.process is None or not sandbox.process.is_alive()
                    sandbox.timeout = self.load_timeout if fresh else self.timeout
                    try:
                        text, fields = sandbox.process_document((doc.text, doc.metadata.get("url")),
                                                                self.extract_page)
                    except TimeoutError:
                        self.stat_update("timeout")
                        logger.warning(f"⏰ bodyblocks: timeout on document {doc.id}: dropped")
                        continue
                    except EOFError:  # the sandbox process died (out of memory): the next document starts another
                        self.stat_update("broken_process")
                        logger.warning(f"bodyblocks: the extraction process died on document {doc.id}: dropped")
                        continue
                    except Exception as exc:  # noqa: BLE001 - one page's failure drops that page, never the task
                        self.stat_update("clean_error")
                        logger.warning(f"❌ bodyblocks: {type(exc).__name__} on document {doc.id}: {exc}: dropped")
                        continue
                if text is None:  # every document would fail alike: the task stops, saying why
                    raise RuntimeError(f"bodyblocks: the {self.pages.extractor_name!r} extractor cannot be built "
                                       f"({fields['load_error']})")
                doc.text = text
                doc.metadata.update(fields)
                if text or self.keep_empty:
                    self.stat_update(StatHints.forwarded)
                    self.update_doc_stats(doc)
                    yield doc
                else:
                    self.stat_update(StatHints.dropped)
