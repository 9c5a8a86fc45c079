"""The dataclasses that flow through the pipeline: Page (bytes) -> Decoded (text) -> Document (blocks) -> Extraction."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Decoded:
    """The result of turning page bytes into text (see decode.py)."""

    text: str
    encoding: str  # codec actually used, e.g. "utf-8", "gb18030", "cp1252"
    replaced: bool  # True when undecodable bytes had to be replaced (U+FFFD)
    declared: list[str] = field(default_factory=list)  # charsets the page declared, in order found
    bom: bool = False  # a byte-order mark decided the encoding
    guessed: bool = False  # no BOM, declaration that held, nor uncontradicted UTF-8 decided it (decode.py)


@dataclass
class Page:
    """One input page: raw bytes (or text) plus what a dataset knows about it."""

    id: str
    html: bytes | str
    url: str | None = None
    lang: str | None = None
    gold: str | None = None  # gold main text, one paragraph per line
    snippets: dict[str, list[str]] | None = None  # {"with": [...], "without": [...]}
    split: str | None = None  # the source's own split name
    dataset: str | None = None  # dataset folder name
    labels_html: bytes | None = None  # L3S block-annotated copy, when present
    meta: dict[str, Any] = field(default_factory=dict)
    block_labels: Any = None  # people's labels of its blocks (annotate.store.Annotation), when present


@dataclass
class Block:
    """One text block of a page, in document order, with its DOM features."""

    index: int  # position in the page's block list
    text: str  # visible text; inline tags merged, <br> as "\n", entities decoded
    tag: str  # tag name of the block element ("p", "div", "h2", "td", ...)
    tag_path: str  # e.g. "html/body/div#main/div.article-body/p"
    xpath: str  # e.g. "/html[1]/body[1]/div[2]/p[3]"
    depth: int  # depth of the block element below <html> (html = 0)
    text_len: int = 0  # characters, white space excluded
    link_len: int = 0  # characters inside <a>, white space excluded
    link_density: float = 0.0  # link_len / text_len
    punct_count: int = 0  # Chinese and Western punctuation marks
    punct_density: float = 0.0  # punct_count / text_len
    heading_level: int = 0  # 1..6 for <h1>..<h6>, 0 otherwise
    is_list_item: bool = False
    is_table_cell: bool = False
    sibling_paragraphs: int = 0  # <p> children of the block's parent element
    in_link_only: bool = False  # every character of the text sits inside links
    # inline marks in the order they open, for Markdown: ("link", text, href) and ("strong" | "em", text, None)
    marks: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def is_heading(self) -> bool:
        return self.heading_level > 0

    def __reduce__(self) -> tuple[type[Block], tuple[Any, ...]]:
        """Pickled as its values in field order: a quarter of the default's time to load (the batch runner's
        workers send every page's blocks back)."""
        return Block, _block_values(self)


_block_values = operator.attrgetter(*(f.name for f in fields(Block)))


@dataclass
class Document:
    """A segmented page: ordered blocks plus the title channel and decoding facts."""

    blocks: list[Block]
    title: str = ""
    encoding: str = "utf-8"
    replaced: bool = False
    truncated: bool = False  # the input was cut at the size limit
    extra: dict[str, Any] = field(default_factory=dict)  # what an extractor's segmenter adds per page
    guessed: bool = False  # the charset is a guess (Decoded.guessed)
    # the blocks hold text a browser hides until a script runs (<noscript>, <template>: page/hidden.py), read because
    # the visible page has no article
    hidden_source: bool = False

    @property
    def text(self) -> str:
        """All visible text, one block per line group."""
        return "\n".join(b.text for b in self.blocks)


@dataclass
class Extraction:
    """What an extractor returns for one page."""

    text: str  # body text, one paragraph per line; "" when no body was found
    title: str = ""
    extractor: str = ""
    encoding: str | None = None
    blocks: list[Block] | None = None  # the page's blocks, when the extractor works on blocks
    probabilities: list[float] | None = None  # per block P(body), aligned with blocks
    kept: list[int] | None = None  # indices of the blocks kept as body
    confidence: float | None = None  # page-level confidence in [0, 1]
    low_confidence: bool = False  # no block looked confidently like body
    # why low_confidence is set (extraction/decision.py), one line; "" when it is not, or the extractor does not say
    low_confidence_reason: str = ""
    no_body: bool = False  # the extractor decided the page has no body text
    replaced: bool = False  # decoding needed replacement characters
    truncated: bool = False  # the page was cut at the segmenter's size limit (segment.MAX_CHARS) before parsing
    # what the page states about itself (metadata.py: meta tags, JSON-LD, htmldate); None where it states nothing
    author: str | None = None
    date: str | None = None  # publication date, YYYY-MM-DD
    site_name: str | None = None
    language: str | None = None  # the page's declared language, ISO 639 ("en", "zh")
    canonical_url: str | None = None
    headline: int | None = None  # the block the title was read from, left out of text (None: no headline block)
    byline: str = ""  # the byline/dateline lines next to the headline, left out of text (extraction/roles.py)
    standfirst: str = ""  # the summary paragraph under the headline (the dek), left out of text (extraction/roles.py)
    guessed: bool = False  # the page's charset is a guess (Decoded.guessed): the text may be mojibake
    hidden_source: bool = False  # the text was read from hidden markup (<noscript>, <template>), the visible page
    # holding no article (Document.hidden_source, page/hidden.py)
    error_page: bool = False  # an error or "not found" page (extraction/kinds.py): no body, rather than its error text
    error_text: str = ""  # an error page's message (the text it kept, out of text): "" on other pages
    # the article's figure captions and photo credits, in page order, left out of text (extraction/roles.is_caption)
    captions: list[str] = field(default_factory=list)
    # readers' comments under the article, one per block in page order, left out of text (extraction/roles.in_comments;
    # kept in text instead with the rule's `comments`, and on a thread page, whose posts are its body)
    comments: list[str] = field(default_factory=list)
    caption_blocks: list[int] = field(default_factory=list)  # the indices of the caption blocks (with blocks)
    # the page's kind (classify/pagekind.py): article, forum, product, collection, listing, documentation or
    # service; None from an extractor that does not predict it
    page_kind: str | None = None
