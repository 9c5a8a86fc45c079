"""Peer extractors behind the project's interface: trafilatura, readability-lxml and GNE.

All three get the same decoded text (decode.py), so that a comparison measures extraction, not charset
guessing. Their internal failures are raised as PeerError (an InputError with reason "peer-error"), so
that a batch records them per page instead of crashing; "no content found" is an empty extraction.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import re

from bodyblocks.baselines.dom import clean_line, fragment_lines
from bodyblocks.errors import InputError
from bodyblocks.page.decode import to_text
from bodyblocks.types import Decoded, Extraction

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
PEER_MODULES = {"trafilatura": "trafilatura", "readability": "readability", "gne": "gne"}


class PeerError(InputError):
    """A peer extractor raised on this page."""

    reason = "peer-error"


def peer_installed(name: str) -> bool:
    """Whether the peer's package can be imported (they are the optional extra `peers`)."""
    return importlib.util.find_spec(PEER_MODULES[name]) is not None


def _decoded(html: str | bytes) -> tuple[str, Decoded]:
    """Decoded text without an XML declaration or control characters (both break lxml on str input)."""
    decoded = to_text(html)
    return _CONTROL.sub("", _XML_DECL.sub("", decoded.text, count=1)), decoded


def _lines(text: str | None) -> str:
    """Non-empty, white-space-normalised lines."""
    return "\n".join(c for c in (clean_line(x) for x in (text or "").splitlines()) if c)


def _done(name: str, text: str, title: str | None, decoded: Decoded, author: str | None = None,
          comments: str = "") -> Extraction:
    """The Extraction of a peer's output (its author, where it gives one, as Extraction.author; its readers'
    comments, one per line, as Extraction.comments)."""
    return Extraction(
        text, clean_line(title or ""), name, decoded.encoding, no_body=not text, replaced=decoded.replaced,
        author=clean_line(author or "") or None, comments=_lines(comments).splitlines(),
    )


def trafilatura_title_author(tree: object) -> tuple[str | None, str | None]:
    """The title and author that trafilatura's bare_extraction(with_metadata=True) reports (its extract_metadata's
    steps for them: meta tags, then JSON-LD, then the page's own elements), without its date search."""
    from trafilatura.metadata import examine_meta, extract_author, extract_meta_json, extract_title

    meta = examine_meta(tree)
    if meta.author and " " not in meta.author:  # as extract_metadata: a one-word author is dropped
        meta.author = None
    try:
        meta = extract_meta_json(tree, meta)
    except Exception:  # noqa: BLE001 - as extract_metadata, which logs and goes on
        pass
    return meta.title or extract_title(tree), meta.author or extract_author(tree)


class TrafilaturaExtractor:
    """trafilatura.bare_extraction without comments, with tables; its title and author as its metadata step finds
    them (trafilatura_title_author); with `comments` (the default) the readers' comments its own comment step finds
    (a second bare_extraction with include_comments=True) as Extraction.comments, beside the same body.

    The body is always the one without comments: with them trafilatura also reads a page it takes for a forum
    differently (its posts become the body). with_metadata=True would also search dates, which takes six times as
    long (measured on dragnet) and does not change the text, so only the title and author are asked for.
    """

    name = "trafilatura"

    def __init__(self, comments: bool = True) -> None:
        self.comments = comments

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """trafilatura's text, one paragraph per line."""
        import trafilatura
        from trafilatura.utils import load_html

        text, decoded = _decoded(html)
        try:
            tree = load_html(text)
            if tree is None:
                return _done(self.name, "", None, decoded)
            title, author = trafilatura_title_author(tree)
            doc = trafilatura.bare_extraction(copy.deepcopy(tree) if self.comments else tree, url=url,
                                              include_comments=False, include_tables=True)
        except Exception as exc:  # noqa: BLE001 - any failure inside the peer is recorded, not fatal
            raise PeerError(f"trafilatura: {type(exc).__name__}: {exc}") from exc
        said = ""
        if self.comments and doc is not None:
            try:
                found = trafilatura.bare_extraction(tree, url=url, include_comments=True, include_tables=True)
            except Exception as exc:  # noqa: BLE001 - the body stands without its comments
                logging.getLogger(__name__).warning("trafilatura's comment pass failed: %s: %s",
                                                    type(exc).__name__, exc)
            else:
                said = (found.comments or "") if found is not None else ""
        text = _lines(doc.text) if doc is not None else ""
        return _done(self.name, text, title, decoded, author, said)


class ReadabilityExtractor:
    """readability-lxml's summary HTML, turned into text lines."""

    name = "readability"

    def __init__(self) -> None:
        # readability logs a traceback for every page it cannot summarise; we raise PeerError with the
        # message instead, so its own log would only repeat it
        logging.getLogger("readability.readability").setLevel(logging.CRITICAL)

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """The summary's block texts, one per line."""
        from readability import Document

        text, decoded = _decoded(html)
        try:
            doc = Document(text, url=url)
            summary = doc.summary(html_partial=True)
            title = doc.short_title()
        except Exception as exc:  # noqa: BLE001
            raise PeerError(f"readability: {type(exc).__name__}: {exc}") from exc
        return _done(self.name, "\n".join(fragment_lines(summary)), title, decoded)


class GneExtractor:
    """GeneralNewsExtractor (GNE) on the decoded HTML; its title and author beside the text."""

    name = "gne"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """GNE's content text; its "no content" exception is an empty extraction."""
        from gne import GeneralNewsExtractor
        from gne.exceptions import NoContentException

        text, decoded = _decoded(html)
        try:
            result = GeneralNewsExtractor().extract(text)
        except NoContentException:
            return _done(self.name, "", None, decoded)
        except Exception as exc:  # noqa: BLE001
            raise PeerError(f"gne: {type(exc).__name__}: {exc}") from exc
        return _done(self.name, _lines(result.get("content")), result.get("title"), decoded, result.get("author"))
