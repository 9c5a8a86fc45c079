"""A page's metadata, read from the tree the segmenter parsed already: author, date, site name, language, URL.

    meta = page_metadata(tree, url="https://example.com/news/2024/05/harbour")
    meta.author, meta.date, meta.site_name, meta.language, meta.canonical_url

What each field is read from, first found wins:
  author         <meta name=author|article:author|dc.creator|parsely-author|sailthru.author|byl>, else the
                 JSON-LD (schema.org) "author" of the page's Article (names joined by "; "); a label before a
                 name ("By ", "Von ", "Par ", "作者：") and a separator after it ("|") left out (author_name);
  date           the publication date as YYYY-MM-DD, from htmldate's first stages (meta tags, JSON-LD, then
                 the URL's date; htmldate.core with extensive_search off, on this tree as it is, uncopied:
                 its later stages copy and prune the whole page and read dates out of the text);
  site_name      og:site_name, else <meta name=application-name>, else the JSON-LD publisher's name;
  language       <html lang>, else a content-language <meta>, else og:locale (lower-case ISO 639 code);
  canonical_url  <link rel=canonical>, else og:url, made absolute against the page's URL.
Nothing is guessed from the text; a field the page does not state is None. htmldate is optional: without it
(pip install htmldate) the date is None and the other fields are read all the same.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin

FIELDS = ("author", "date", "site_name", "language", "canonical_url")  # Extraction's fields, in this order
METADATA = "metadata"  # the key of a segmented page's Metadata in Document.extra (segment.segment_tree)
_AUTHOR_NAMES = ("author", "article:author", "dc.creator", "dcterms.creator", "parsely-author", "sailthru.author",
                 "byl", "citation_author")
_SITE_NAMES = ("og:site_name", "application-name")
_MAX_JSONLD = 200_000  # characters of JSON-LD read per page (a store page may embed megabytes of it)
_MAX_FIELD = 300  # characters kept of a field's value
# JSON-LD nested deeper than this ([ and { inside each other) is skipped unparsed: schema.org objects nest a few
# levels, and json.loads recurses once per level (a page nesting 2,000 deep raised RecursionError)
MAX_JSONLD_DEPTH = 64
# a label before an author's name ("By Jamelle Bouie", "Von Max Muster", "作者：张三"), and separators left after it
# ("Ann Smith |"); "and" between names stays (it joins names)
_AUTHOR_LABEL = re.compile(
    r"^(?:(?:written|posted|words|text|story|report(?:ed)?)\s+by|by|przez)\s*[:：]?\s+(?=\S)"
    r"|^(?:von|par|por|door)\s+(?=\S+\s+\S)"  # words that begin names too ("Von Miller"): two words after them
    r"|^(?:authors?|autor(?:in|ka)?|auteur|autore|автор|作者|撰文|记者|記者|文)\s*[:：/／]\s*",
    re.IGNORECASE)
_AUTHOR_TRIM = re.compile(r"^[\s|｜·•,;:：/-]+|[\s|｜·•,;:：/-]+$")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


@dataclass(frozen=True)
class Metadata:
    """What a page states about itself (module docstring); None where it states nothing."""

    author: str | None = None
    date: str | None = None
    site_name: str | None = None
    language: str | None = None
    canonical_url: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def with_metadata(ex: Any, meta: Metadata | None) -> Any:
    """The Extraction `ex` with the page's metadata fields set (in place; returned)."""
    if meta is not None:
        ex.author, ex.date, ex.site_name = meta.author, meta.date, meta.site_name
        ex.language, ex.canonical_url = meta.language, meta.canonical_url
    return ex


def resolve_canonical(ex: Any, url: str | None) -> Any:
    """The Extraction `ex` with a relative canonical URL made absolute against the page's own URL (in place;
    returned): the segmenter reads the page without knowing where it came from."""
    if ex.canonical_url and "://" not in ex.canonical_url:
        ex.canonical_url = _absolute(ex.canonical_url, url)
    return ex


def _absolute(href: str, url: str | None) -> str:
    """`href` made absolute against the page's URL when it is known; a malformed address is kept as written."""
    try:
        return urljoin(url, href) if url else href
    except ValueError:
        return href


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:_MAX_FIELD] or None


def author_name(value: str) -> str:
    """An author's name without a label before it ("By Jamelle Bouie" -> "Jamelle Bouie", "作者：张三" -> "张三") or
    a separator after it ("Ann Smith |"); a value that is only a label is kept as it is."""
    name = _AUTHOR_TRIM.sub("", " ".join(value.split()))
    bare = _AUTHOR_TRIM.sub("", _AUTHOR_LABEL.sub("", name, count=1))
    return bare or name


def _meta_tags(head: Any) -> dict[str, str]:
    """The <meta name|property|itemprop=... content=...> as a dict, keys lower-case (the first of each)."""
    found: dict[str, str] = {}
    for el in head.iter("meta"):
        content = el.get("content")
        if not content:
            continue
        for attr in ("name", "property", "itemprop", "http-equiv"):
            key = el.get(attr)
            if key:
                found.setdefault(key.strip().lower(), content)
    return found


def _typed_scripts(root: Any) -> list[tuple[str, str]]:
    """(type attribute, text) of the page's <script>s that have both, in document order: one pass over the tree
    for the JSON-LD fields and the date's JSON stage."""
    return [(kind, script.text) for script in root.iter("script")
            if (kind := script.get("type")) and script.text]


def json_depth(text: str) -> int:
    """How deep the brackets of a JSON text nest (strings left out), without parsing it."""
    depth = deepest = 0
    for c in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _jsonld(scripts: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The page's JSON-LD objects (@graph flattened); what does not parse, or nests deeper than MAX_JSONLD_DEPTH,
    is left out."""
    objects: list[dict[str, Any]] = []
    budget = _MAX_JSONLD
    for kind, text in scripts:
        if kind.strip().lower() != "application/ld+json":
            continue
        budget -= len(text)
        if budget < 0:
            break
        if json_depth(text) > MAX_JSONLD_DEPTH:
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: deep enough for a thread's smaller stack
            continue
        stack = data if isinstance(data, list) else [data]
        while stack:
            item = stack.pop(0)
            if isinstance(item, dict):
                objects.append(item)
                graph = item.get("@graph")
                if isinstance(graph, list):
                    stack.extend(graph)
    return objects


def _names(value: Any) -> list[str]:
    """Names of a JSON-LD person or organisation value (a name, an object with "name", or a list of them)."""
    items = value if isinstance(value, list) else [value]
    names = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name.strip():
            names.append(author_name(name))
    return names


def _from_jsonld(objects: list[dict[str, Any]], key: str) -> str | None:
    """The names under `key` of the first object that has them, an article's before others'."""
    ordered = sorted(objects, key=lambda o: "Article" not in str(o.get("@type", "")))
    for obj in ordered:
        names = _names(obj.get(key))
        if names:
            return "; ".join(dict.fromkeys(names))
    return None


def _language(root: Any, tags: dict[str, str]) -> str | None:
    value = root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang") or tags.get(
        "content-language") or tags.get("og:locale")
    if not value:
        return None
    code = value.strip().replace("_", "-").split("-", 1)[0].split(",", 1)[0].strip().lower()
    return code if 2 <= len(code) <= 3 and code.isalpha() else None


def _canonical(root: Any, tags: dict[str, str], url: str | None) -> str | None:
    href = None
    for link in root.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split() and link.get("href"):
            href = link.get("href")
            break
    href = _clean(href or tags.get("og:url"))
    return None if href is None else _absolute(href, url)


_DATE_OPTIONS: Any = None


# the <script> types htmldate's JSON stage reads (json_search: `@type=` in XPath, an exact comparison)
_DATE_SCRIPT_TYPES = ("application/ld+json", "application/settings+json")


def _date(head: Any, root: Any, url: str | None, canonical: str | None, scripts: list[tuple[str, str]]
          ) -> str | None:
    """htmldate's fast stages on the tree as it is (find_date would copy and prune a whole page first). Its JSON
    stage runs only when a script it reads holds '"date' (it finds nothing otherwise), so that the tree is not
    searched again for scripts `scripts` has."""
    global _DATE_OPTIONS
    try:
        from htmldate import core
        from htmldate.validators import get_max_date, get_min_date
    except ImportError:
        return None
    if _DATE_OPTIONS is None:
        _DATE_OPTIONS = core.Extractor(False, get_max_date(None), get_min_date(None), True, "%Y-%m-%d")
    options = _DATE_OPTIONS
    try:
        json_dates = any(kind in _DATE_SCRIPT_TYPES and '"date' in text for kind, text in scripts)
        with warnings.catch_warnings():  # dateutil warns of time zones it does not know ("CST"): not the user's
            warnings.simplefilter("ignore")
            return (core.examine_header(head, options) or (json_dates and core.json_search(root, options))
                    or core.extract_url_date(url or canonical, options))
    except (ValueError, TypeError, OverflowError, AttributeError):  # a date no calendar has; htmldate changed
        return None


def page_metadata(root: Any, url: str | None = None, date: bool = True) -> Metadata:
    """The page's metadata (module docstring) from its parsed lxml root element (segment.segment_tree's); `date`
    False: no publication date (htmldate is not imported).

    Meta and link tags are read in <head> (where the segmenter leaves head content), not in the whole tree:
    a walk of every element cost more than all the rest."""
    if root is None:
        return Metadata()
    head = root.find("head")
    head = root if head is None else head
    tags = _meta_tags(head)
    scripts = _typed_scripts(root)
    objects: list[dict[str, Any]] | None = None
    author = next((tags[n] for n in _AUTHOR_NAMES if tags.get(n) and "://" not in tags[n]), None)
    if author is None:
        objects = _jsonld(scripts)
        author = _from_jsonld(objects, "author")
    site = next((tags[n] for n in _SITE_NAMES if tags.get(n)), None)
    if site is None:
        objects = _jsonld(scripts) if objects is None else objects
        site = _from_jsonld(objects, "publisher")
    canonical = _canonical(head, tags, url)
    author = author_name(author) if author else None
    return Metadata(_clean(author), _date(head, root, url, canonical, scripts) if date else None, _clean(site),
                    _language(root, tags), canonical)
