"""The two naive baselines: `regex` (strip every tag) and `longest` (the largest text block)."""

from __future__ import annotations

import html as htmllib
import re

from bodyblocks.baselines.dom import page_title, parse
from bodyblocks.baselines.pruning import block_lines, body_of, drop_tags, text_blocks
from bodyblocks.baselines.rules import count_chars
from bodyblocks.page.decode import to_text
from bodyblocks.page.htmltags import BASELINE_INVISIBLE_TAGS
from bodyblocks.types import Extraction

_INVISIBLE = re.compile(
    r"<(script|style|noscript|template|svg|head|textarea)\b[^>]*>.*?</\1\s*>|<!--.*?-->|<!\[CDATA\[.*?\]\]>",
    re.IGNORECASE | re.DOTALL,
)
_BREAK = re.compile(r"</?(?:p|div|br|li|tr|td|th|h[1-6]|ul|ol|table|section|article|pre|blockquote)\b[^>]*>",
                    re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"[^\S\n]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


class RegexExtractor:
    """Strip tags with regular expressions: every visible character, boilerplate included."""

    name = "regex"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """All text outside tags, one line per block-level tag boundary."""
        decoded = to_text(html)
        raw = decoded.text
        m = _TITLE.search(raw)
        title = _SPACES.sub(" ", htmllib.unescape(_TAG.sub("", m.group(1)))).strip() if m else ""
        text = _BREAK.sub("\n", _INVISIBLE.sub(" ", raw))
        text = htmllib.unescape(_TAG.sub("", text))
        lines = [ln for ln in (_SPACES.sub(" ", x).strip() for x in _CONTROL.sub("", text).split("\n")) if ln]
        body = "\n".join(lines)
        return Extraction(body, title, self.name, decoded.encoding, no_body=not body, replaced=decoded.replaced)


class LongestExtractor:
    """Keep the single text block (a block-level element's own inline text) with the most characters."""

    name = "longest"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """The largest block's text; empty when the page has no visible text."""
        root, decoded = parse(html)
        title = page_title(root)
        drop_tags(root, BASELINE_INVISIBLE_TAGS)
        blocks = text_blocks(body_of(root))
        best = max(blocks, key=lambda b: count_chars(b[1]), default=None)
        text = "\n".join(block_lines(best[1])) if best else ""
        return Extraction(text, title, self.name, decoded.encoding, no_body=not text, replaced=decoded.replaced)
