"""The work libxml2 is given, bounded before it parses: it checks each attribute of a start tag against all the
tag's earlier ones, so one element with n attributes costs n² (100,000 distinct names take 12 s, 1,000,000 about
20 minutes), and nothing interrupts it once it runs (a signal waits for it). A start tag with more than
MAX_ATTRIBUTES attributes keeps its first MAX_ATTRIBUTES; no page a browser shows needs more.

Start tags are found as an HTML5 tokenizer finds them: a quote opens a value only after "=", so a ">" or "<"
inside a quoted value does not end the tag. Only tags longer than LONG_TAG characters can hold that many
attributes, and only those are counted.

A page with more than MAX_ELEMENTS start tags is refused (TooLarge) before parsing: libxml2 takes about 7 µs an
element (700,000: 5 s, uninterrupted), and nested past its depth limit BeautifulSoup 65 µs (200,000 nested
elements: 13 s); the datasets' largest page has about 21,600 tags.
"""

from __future__ import annotations

import re

from bodyblocks.errors import TooLarge
from bodyblocks.page.hidden import TEMPLATE_TYPES

MAX_ATTRIBUTES = 256  # attributes of one start tag that libxml2 is given; the rest are dropped
LONG_TAG = 2 * MAX_ATTRIBUTES  # an attribute takes at least two characters ("a ")
MAX_ELEMENTS = 400_000  # start tags of a page the parser is given (twice builder.MAX_BLOCKS, its bound after)
_ANY_START_TAG = re.compile(r"<[A-Za-z]")

# What libxml2 reads as markup, in document order: comments and the text of raw-text elements (script, style, ...)
# are skipped whole (a "<b" in a script is no tag); a start tag's extent runs to the first ">" outside a value
# quoted after "=" (possessive: no backtracking).
_TAG_BODY = r"""(?:[^>"'=]++|=\s*+"[^"]*+"?|=\s*+'[^']*+'?|=|["'])*+>?"""
_MARKUP = re.compile(r"<!--(?:[^-]++|-(?!->))*+"
                     r"|<(?P<raw>script|style|textarea|title|xmp|iframe|noembed|noframes)(?=[\s/>])" + _TAG_BODY
                     + r"(?:[^<]++|<(?!/(?P=raw)[\s/>]))*+"
                     r"|<[A-Za-z]" + _TAG_BODY, re.DOTALL | re.IGNORECASE)
_START_TAG = re.compile(r"<[A-Za-z]" + _TAG_BODY)
# One attribute of a start tag's body: a name, then maybe "=" and a value (HTML5: a name may begin with "=").
_ATTRIBUTE = re.compile(r"""(?:=|[^\s/>=])[^\s/>=]*+(?:\s*+=\s*+(?:"[^"]*+"?|'[^']*+'?|[^\s>]*+))?""")
_TAG_NAME = re.compile(r"<[^\s/>]*+")
_TYPE = re.compile(r"""\stype\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*))""", re.IGNORECASE)


def bound_attributes(text: str) -> tuple[str, int]:
    """The page with each start tag cut to its first MAX_ATTRIBUTES attributes, and how many tags were cut; the
    markup inside a script template (hidden.TEMPLATE_TYPES, which hidden.py parses on its own) too."""
    if len(text) < LONG_TAG:
        return text, 0
    pieces: list[str] = []
    done, cut = 0, 0
    for found in _MARKUP.finditer(text):
        if found.end() - found.start() <= LONG_TAG or found.group().startswith("<!--"):
            continue
        tag = _START_TAG.match(text, found.start())  # a raw-text element's own start tag, or the match itself
        if tag is None:
            continue
        kept = _kept_end(tag.group()) if tag.end() - tag.start() > LONG_TAG else None
        if kept is not None:
            pieces += [text[done : tag.start() + kept], ">"]
            done, cut = tag.end(), cut + 1
        if (found.group("raw") or "").lower() == "script" and _template(tag.group()):
            inner, n = bound_attributes(text[tag.end() : found.end()])  # cut within it: its end tag stays
            if n:
                pieces += [text[done : tag.end()], inner]
                done, cut = found.end(), cut + n
    if not cut:
        return text, 0
    pieces.append(text[done:])
    return "".join(pieces), cut


def _template(start_tag: str) -> bool:
    """Whether a script's start tag makes it a template of markup (its type is one of TEMPLATE_TYPES)."""
    m = _TYPE.search(start_tag)
    return m is not None and (m.group(1) or m.group(2) or m.group(3) or "").strip().lower() in TEMPLATE_TYPES


def _kept_end(tag: str) -> int | None:
    """Where a start tag's text is cut to keep MAX_ATTRIBUTES attributes, or None when it has no more."""
    name = _TAG_NAME.match(tag)
    start = name.end() if name else 1
    for n, attribute in enumerate(_ATTRIBUTE.finditer(tag, start)):
        if n == MAX_ATTRIBUTES:
            return attribute.start()
    return None


def check_elements(text: str) -> None:
    """Raise TooLarge for a page of more than MAX_ELEMENTS start tags (counted only past that many "<")."""
    if text.count("<") > MAX_ELEMENTS:
        n = sum(1 for _ in _ANY_START_TAG.finditer(text))
        if n > MAX_ELEMENTS:
            raise TooLarge(f"{n:,} start tags, more than {MAX_ELEMENTS:,}: a page this fragmented is failed alone "
                           "rather than parsed for minutes")
