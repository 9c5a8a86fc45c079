"""Page-level numbers for the page-kind classifier (classify/pagekind.py): what a segmented page looks like as a
whole, cheap to read from the blocks and the tree the segmenter parsed already.

    cues = page_cues(root)                        # at segmentation: structured-data types, og:type, form counts
    x = kind_features(doc.blocks, doc.title, url, cues)   # one row of PAGE_FEATURES (float64, NaN: unknown)
    d = decision_features(ex.blocks, ex.probabilities, ex.kept, ex.confidence)   # DECISION_FEATURES of a decision

A row of the classifier (KIND_FEATURES) is PAGE_FEATURES, then DECISION_FEATURES. What it holds, in order:
  blocks     block and character counts, the shares of link text, list items, table cells, link-only blocks,
             short blocks, headings by level, punctuation, digits; how much of the page its largest group of
             repeated blocks holds (blocks sharing their tag path, digits left out of ids and classes: a listing's
             cards, a forum's posts) and in how many groups;
  tag path   the share of blocks whose tag path names a product, price, comment/post, forum/thread, docs/sidebar,
             card/item/grid, or a service-ish word (_PATH_CUES);
  words      blocks whose whole text is a cue ("Add to cart", "Reply", "Quote", "Edit this page", "Contact us",
             "Read more", ...; _TEXT_CUES), and short blocks that are a price ("$19.99", "12,90 €");
  title      cue words of the title channel by kind (_TITLE_CUES);
  url        the path of the page's URL (where its caller knows it), else of its canonical URL (<link
             rel=canonical>, og:url): its depth, slug length, a date or digits in it, cue words by kind (_URL_CUES);
             NaN without either;
  markup     structured-data @type (JSON-LD and microdata) by kind (_TYPE_CUES), og:type, and counts of forms,
             inputs, buttons, <pre>/<code>, <article>, <nav>, <aside>, <time> elements (page_cues).
  decision   what a block extractor kept: its share of the page's text, its blocks and characters, how much
             of it its largest group holds and in how many groups, its link density, list items and table cells;
             P(body) over the page's text and the share of blocks over 0.5; the page's confidence; nothing kept.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from operator import attrgetter
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from bodyblocks.types import Block

CUES = "page_cues"  # the key of a segmented page's page_cues in Document.extra (kinds.add_kind)
URL = "url"  # the key of the page's own URL in Document.extra, where its caller knows it (extract(url=), batch)
SHORT = 20  # characters of a short block (a button, a label, a price)
_ELEMENTS = ("form", "input", "select", "textarea", "button", "pre", "code", "article", "nav", "aside", "time",
             "table", "img", "iframe")
_LD_TYPES = re.compile(r'"@type"\s*:\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\])')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIGITS = re.compile(r"[.#][^.#/]*\d[^.#/]*")
_HAS_DIGIT = re.compile(r"\d")
_LEN, _LINKS, _PUNCT = attrgetter("text_len"), attrgetter("link_len"), attrgetter("punct_count")
_LIST, _CELL, _LINK_ONLY = attrgetter("is_list_item"), attrgetter("is_table_cell"), attrgetter("in_link_only")
_HEADING, _TAG_PATH = attrgetter("heading_level"), attrgetter("tag_path")

# structured-data types by kind (JSON-LD @type and microdata itemtype, matched whole, case kept)
_TYPE_CUES: dict[str, frozenset[str]] = {
    "article": frozenset({"Article", "NewsArticle", "BlogPosting", "Report", "ReportageNewsArticle",
                          "OpinionNewsArticle", "AnalysisNewsArticle", "ScholarlyArticle", "LiveBlogPosting",
                          "Blog", "Recipe"}),
    "product": frozenset({"Product", "Offer", "AggregateOffer", "AggregateRating", "Review", "ProductGroup",
                          "IndividualProduct", "Car", "Vehicle", "SoftwareApplication", "Book"}),
    "forum": frozenset({"DiscussionForumPosting", "QAPage", "Question", "Answer", "Comment", "SocialMediaPosting"}),
    "collection": frozenset({"CollectionPage", "ItemList", "SearchResultsPage", "OfferCatalog", "ListItem"}),
    "documentation": frozenset({"TechArticle", "APIReference", "SoftwareSourceCode", "HowTo", "Course"}),
    "service": frozenset({"Service", "LocalBusiness", "ProfessionalService", "Organization", "Corporation",
                          "FAQPage", "ContactPage", "AboutPage", "Event", "Place", "Restaurant", "MedicalClinic"}),
    "webpage": frozenset({"WebPage", "WebSite", "BreadcrumbList", "SiteNavigationElement"}),
}
_OG_TYPES = ("article", "product", "website", "profile", "book", "video")
# URL words by kind (the path split on / - _ . and digits, lower-cased, and the host's subdomains)
_URL_CUES: dict[str, frozenset[str]] = {
    "article": frozenset({"blog", "news", "article", "articles", "story", "stories", "post", "posts", "press",
                          "insights", "magazine", "opinion", "features", "column"}),
    "product": frozenset({"product", "products", "p", "dp", "item", "items", "shop", "store", "buy", "sku",
                          "catalog", "model", "gp"}),
    "forum": frozenset({"forum", "forums", "thread", "threads", "topic", "topics", "t", "questions", "question",
                        "discussion", "discussions", "community", "showthread", "viewtopic", "board", "boards", "r",
                        "comments", "answers", "qa"}),
    "collection": frozenset({"category", "categories", "tag", "tags", "collections", "collection", "archive",
                             "archives", "search", "browse", "c", "shop-all", "department", "subcategory"}),
    "documentation": frozenset({"docs", "doc", "documentation", "api", "reference", "manual", "sdk", "latest",
                                "stable", "developer", "developers", "apidocs", "javadoc", "man", "usersguide",
                                "userguide", "readthedocs", "dev"}),
    "help": frozenset({"guide", "guides", "wiki", "learn", "help", "kb", "support", "tutorial", "tutorials", "howto",
                       "faq", "knowledge", "knowledgebase", "glossary", "academy"}),
    "service": frozenset({"services", "service", "solutions", "solution", "pricing", "about", "contact", "features",
                          "plans", "company", "industries", "consulting", "agency", "treatments", "repair",
                          "locations", "careers", "team", "who", "what", "we", "do", "offer"}),
}
_TITLE_CUES: dict[str, re.Pattern[str]] = {
    "forum": re.compile(r"\b(?:forums?|thread|topic|discussion|community|reddit|question|answers?|help me)\b|\?",
                        re.I),
    "product": re.compile(r"\b(?:buy|price|sale|shop|store|\$\d|review|specs?|kaufen|acheter)\b", re.I),
    "collection": re.compile(r"\b(?:best|top \d+|\d+ best|category|archives?|collection|shop all|all products|"
                             r"tag|page \d+|results?|list of|browse)\b", re.I),
    "documentation": re.compile(r"\b(?:docs?|documentation|api|reference|guide|manual|tutorial|how to|sdk|"
                                r"install(?:ation|ing)?|configur\w*|getting started)\b", re.I),
    "service": re.compile(r"\b(?:services?|solutions?|agency|consult\w*|company|contact|pricing|hire|repair|"
                          r"near me|experts?|professional)\b", re.I),
    "offer": re.compile(r"\b(?:courses?|programs?|programmes?|degrees?|insurance|treatments?|therapy|training|"
                        r"classes|rentals?|plans?|financing|loans?|tuition|calculator|certificat\w*|software|"
                        r"platform|tools?)\b", re.I),
    "listing": re.compile(r"\b(?:news|latest|blog|archives?|reviews|stories|jobs|newest|trending|events|"
                          r"resources|articles|posts|home ?page|welcome)\b", re.I),
}
# tag-path words by kind (tokens of ids and classes)
_PATH_CUES: dict[str, re.Pattern[str]] = {  # matched in the lower-cased segments of a tag path
    "product": re.compile(r"product|price|cart|sku|offer|variant|add-to|buy"),
    "post": re.compile(r"comment|post|reply|message|thread|forum|topic|answer|question"),
    "docs": re.compile(r"docs?\b|doc-|toc|sidebar|markdown|highlight|api|content-body|theme-doc|md-|rst"),
    "card": re.compile(r"card|item|grid|tile|listing|result|teaser|entry-summary|excerpt|archive"),
    "service": re.compile(r"service|hero|cta|feature|testimonial|section|elementor|wp-block-cover|banner"),
    "article": re.compile(r"article|entry-content|post-content|story|byline|author"),
}
_ANY_PATH_CUE = re.compile("|".join(f"(?P<g{j}>{p.pattern})" for j, p in enumerate(_PATH_CUES.values())))
_MAX_SEGMENTS = 1 << 16  # tag-path segments whose cues are remembered (pages and sites share most of theirs)
# whole block texts (lower-cased, white space folded) that cue a kind
_TEXT_CUES: dict[str, frozenset[str]] = {
    "cart": frozenset({"add to cart", "add to bag", "add to basket", "buy now", "in stock", "out of stock",
                       "add to wishlist", "add to wish list", "quantity", "qty", "sku", "specifications",
                       "description", "reviews", "write a review", "free shipping", "select size", "size guide",
                       "in den warenkorb", "ajouter au panier", "加入购物车"}),
    "reply": frozenset({"reply", "quote", "report", "like", "likes", "joined", "posts", "share", "permalink",
                        "upvote", "downvote", "vote", "answer", "answers", "best answer", "accepted answer",
                        "reply with quote", "#1", "#2", "#3", "op", "member", "reactions", "回复", "引用"}),
    "docs": frozenset({"edit this page", "on this page", "table of contents", "contents", "next", "previous",
                       "was this page helpful?", "was this helpful?", "copy", "copy code", "note", "warning",
                       "tip", "example", "examples", "parameters", "returns", "syntax", "see also", "prerequisites",
                       "in this article", "feedback"}),
    "service": frozenset({"contact us", "get a quote", "get started", "book now", "request a quote",
                          "schedule a consultation", "learn more", "our services", "call now", "book an appointment",
                          "free consultation", "get in touch", "why choose us", "testimonials", "our team",
                          "contact", "services", "request a demo"}),
    "listing": frozenset({"read more", "read more »", "continue reading", "load more", "show more", "view all",
                          "next page", "older posts", "newer posts", "sort by", "filter", "filters", "view more",
                          "see all", "more"}),
    "article": frozenset({"related articles", "related posts", "share this article", "about the author",
                          "leave a comment", "leave a reply", "you may also like", "related stories", "advertisement"}),
}
# a whole text -> the index of its kind in _TEXT_CUES (the first kind that lists it)
_TEXT_CUE = {words: j for j, cue in reversed(list(enumerate(_TEXT_CUES.values()))) for words in cue}
_PRICE = re.compile(r"^(?:from\s+)?(?:[$€£¥₹]|usd|eur|gbp|rs\.?)\s?\d[\d.,\s]*$"
                    r"|^\d[\d.,\s]*\s?(?:[$€£¥₹]|usd|eur|gbp|kr|zł|руб|元)$", re.I)
_DATE = re.compile(r"\b(?:(?:19|20)\d\d[-/.]\d\d?[-/.]\d\d?|\d\d?[-/.]\d\d?[-/.](?:19|20)?\d\d"
                   r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d\d?,? (?:19|20)\d\d"
                   r"|\d\d? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* (?:19|20)\d\d"
                   r"|\d+ (?:minutes?|hours?|days?|weeks?|months?|years?) ago)\b")
PROSE = 5000  # characters of the page's paragraphs (blocks of 80 characters or more) whose words are counted
_WORD = re.compile(r"[a-z']+")
_WE = frozenset({"we", "our", "us", "we're", "we've", "ours"})
_YOU = frozenset({"you", "your", "you're", "you'll", "yours"})
_SAID = frozenset({"said", "says", "told", "according", "reported", "was", "were", "had"})
_DATE_PATH = re.compile(r"/(?:19|20)\d\d/(?:\d\d?/)?")
_URL_WORDS = re.compile(r"[a-z]+")  # the words of a path segment (an article's slug has many)
_URL_SPLIT = re.compile(r"[-_.~+]|\d+")


def _names(groups: dict[str, Any], prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}:{k}" for k in groups)


PAGE_FEATURES: tuple[str, ...] = (  # kind_features's row: what the segmented page shows
    "log_blocks", "log_chars", "link_share", "list_share", "table_share", "link_only_share", "short_share",
    "h1", "h2", "h3plus", "heading_share", "punct_density", "digit_share", "mean_chars", "long_blocks",
    "top_group_share", "top_group_blocks", "top_group_parents", "groups_of_3", "path_variety",
    "long_share", "prose_parents", "prose_top_parent", "max_sibling_p", "linked_headings", "linked_heading_share",
    "short_dates",
    "we_share", "you_share", "said_share", "sentence_blocks",
    *_names(_PATH_CUES, "path"), *_names(_TEXT_CUES, "text"), "text:price",
    *_names(_TITLE_CUES, "title"), "title_len",
    "url_known", "url_depth", "url_slug_words", "url_date", "url_digits", "url_home", "url_query",
    *_names(_URL_CUES, "url"),
    *_names(_TYPE_CUES, "type"), "type_count", *(f"og:{t}" for t in _OG_TYPES), "og_missing",
    *(f"n_{e}" for e in _ELEMENTS),
)
# decision_features's: what a block extractor kept of the page (NaN where no decision is known)
DECISION_FEATURES: tuple[str, ...] = (
    "kept:text_share", "kept:log_blocks", "kept:log_chars", "kept:top_group_share", "kept:top_group_blocks",
    "kept:log_groups", "kept:link_density", "kept:list_share", "kept:table_share", "p:text_mean", "p:over_half",
    "kept:confidence", "kept:none",
)
KIND_FEATURES: tuple[str, ...] = (*PAGE_FEATURES, *DECISION_FEATURES)  # a row of the page-kind classifier


# ----------------------------------------------------------------------------------------- the tree's cues
def page_cues(root: Any) -> dict[str, Any]:
    """The page's markup cues from its parsed lxml root (segment.segment_tree's; {} without one): the
    structured-data types ("types": JSON-LD @type values and the last part of each microdata itemtype), og:type
    ("og": "" where none) and counts of some elements ("counts", _ELEMENTS; hidden inputs left out). Two passes
    over the tree in C (an xpath for itemtype, an iter over the named tags)."""
    if root is None:
        return {}
    types: list[str] = [str(v).rstrip("/").rsplit("/", 1)[-1] for v in root.xpath("//@itemtype")
                        for v in str(v).split()]
    counts = dict.fromkeys(_ELEMENTS, 0)
    og = ""
    for el in root.iter("script", "meta", *_ELEMENTS):
        tag = el.tag
        if tag == "script":
            if (el.get("type") or "").strip().lower() == "application/ld+json" and el.text:
                types += ld_types(el.text)
        elif tag == "meta":
            if not og and (el.get("property") or el.get("name") or "").strip().lower() == "og:type":
                og = (el.get("content") or "").strip().lower()
        elif tag != "input" or (el.get("type") or "").lower() != "hidden":
            counts[tag] += 1
    return {"types": types, "og": og, "counts": counts}


def ld_types(text: str) -> list[str]:
    """The @type values written in a JSON-LD text, without parsing it ("https://schema.org/" prefixes left out)."""
    found = []
    for match in _LD_TYPES.finditer(text):
        for value in _QUOTED.findall(match.group(1)):
            found.append(value.rstrip("/").rsplit("/", 1)[-1])
    return found


# ----------------------------------------------------------------------------------------- features
@functools.lru_cache(maxsize=_MAX_SEGMENTS)
def _segment(segment: str) -> tuple[str, int]:
    """A tag-path segment without its id and class tokens that hold digits (one post's "#post-123" is the next's
    "#post-124"), and the _PATH_CUES it matches as bits in their order."""
    cues, low = 0, segment.lower()
    if _ANY_PATH_CUE.search(low):  # most segments name none
        for match in _ANY_PATH_CUE.finditer(low):
            cues |= 1 << int(match.lastgroup[1:])  # type: ignore[index]
    return (_DIGITS.sub("", segment) if _HAS_DIGIT.search(segment) else segment), cues


def _path(tag_path: str) -> tuple[str, int]:
    """A tag path's group key (its segments as _segment leaves them) and the _PATH_CUES of any of its segments."""
    parts = list(map(_segment, tag_path.split("/")))
    cues = 0
    for _, bits in parts:
        cues |= bits
    return "/".join([key for key, _ in parts]), cues


def _block_part(blocks: Sequence[Block]) -> list[float]:
    """The block statistics, tag-path and whole-text cues of KIND_FEATURES. Sums over all blocks are taken in C
    (map with attrgetter); Python loops only over the blocks a feature reads (headings, short or long blocks)."""
    n = len(blocks)
    lens = list(map(_LEN, blocks))
    chars = sum(lens)
    longs = [t for t in lens if t >= 200]
    heads = [0, 0, 0]
    linked_heads = 0
    for b in filter(_HEADING, blocks):
        heads[min(b.heading_level, 3) - 1] += 1
        linked_heads += b.link_len >= 0.8 * b.text_len
    prose: list[str] = []  # the text of the page's first paragraphs, PROSE characters
    room, sentences, sibling_p = PROSE, 0, 0
    prose_parents: dict[str, int] = {}  # the parent elements of blocks of 80 characters or more: their characters
    for b, t in zip(blocks, lens, strict=True):
        if t < 80:
            continue
        parent = b.xpath.rpartition("/")[0]
        prose_parents[parent] = prose_parents.get(parent, 0) + t
        sibling_p = max(sibling_p, b.sibling_paragraphs)
        if room > 0:
            prose.append(b.text[:room])
            room -= t
            sentences += b.text.rstrip()[-1:] in ".!?"
    text_hits = [0] * len(_TEXT_CUES)
    short = price = dates = 0
    cue_of = _TEXT_CUE.get
    for b, t in zip(blocks, lens, strict=True):
        if t >= 40:
            continue
        short += t < SHORT
        low = " ".join(b.text.lower().split())
        cue = cue_of(low)
        if cue is not None:
            text_hits[cue] += 1
        if t < SHORT:
            price += bool(_PRICE.match(low))
        dates += bool(_DATE.search(low))
    paths = list(map(_TAG_PATH, blocks))
    sizes = Counter(paths)
    path_chars: dict[str, int] = {}
    for path, t in zip(paths, lens, strict=True):
        path_chars[path] = path_chars.get(path, 0) + t
    merged: dict[str, list[int]] = {}  # group key -> [blocks, characters]
    key_of: dict[str, str] = {}
    path_hits = [0] * len(_PATH_CUES)
    for path, size in sizes.items():
        key, cues = _path(path)
        key_of[path] = key
        group = merged.setdefault(key, [0, 0])
        group[0] += size
        group[1] += path_chars[path]
        for j in range(len(path_hits)):
            if cues >> j & 1:
                path_hits[j] += size
    top_key, (top_blocks, top_chars) = max(merged.items(), key=lambda kv: kv[1][1], default=("", (0, 0)))
    parents = len({b.xpath.rsplit("/", 1)[0] for b, p in zip(blocks, paths, strict=True) if key_of[p] == top_key})
    sample = "".join(b.text for b in blocks[:400])
    digits = sum(map(sample.count, "0123456789"))
    per = max(n, 1)
    words = _WORD.findall(" ".join(prose).lower())
    nwords = max(len(words), 1)
    return [
        math.log1p(n), math.log1p(chars), sum(map(_LINKS, blocks)) / max(chars, 1),
        sum(map(_LIST, blocks)) / per, sum(map(_CELL, blocks)) / per, sum(map(_LINK_ONLY, blocks)) / per,
        short / per, heads[0], heads[1], heads[2], sum(heads) / per, sum(map(_PUNCT, blocks)) / max(chars, 1),
        digits / max(len(sample), 1), chars / per, len(longs),
        top_chars / max(chars, 1), top_blocks, parents, sum(g[0] >= 3 for g in merged.values()),
        len(sizes) / per, sum(longs) / max(chars, 1), len(prose_parents),
        max(prose_parents.values(), default=0) / max(sum(prose_parents.values()), 1), math.log1p(sibling_p),
        linked_heads, linked_heads / max(sum(heads), 1), dates,
        sum(map(_WE.__contains__, words)) / nwords, sum(map(_YOU.__contains__, words)) / nwords,
        sum(map(_SAID.__contains__, words)) / nwords, sentences,
        *(h / per for h in path_hits), *text_hits, price,
    ]


def _url_part(url: str | None) -> list[float]:
    """The URL features of KIND_FEATURES (NaN without a URL, but url_known)."""
    width = 7 + len(_URL_CUES)
    if not url:
        return [0.0] + [math.nan] * (width - 1)
    try:
        parts = urlsplit(url)
    except ValueError:
        return [0.0] + [math.nan] * (width - 1)
    path = parts.path.lower()
    segments = [s for s in path.split("/") if s]
    words = set((parts.hostname or "").split(".")[:-2])  # subdomains: docs., forum., shop., support.
    for s in segments:
        words.update(w for w in _URL_SPLIT.split(s) if w)
        words.add(s)
    last = segments[-1] if segments else ""
    slug_words = len(_URL_WORDS.findall(last))
    return [1.0, len(segments), float(slug_words), float(bool(_DATE_PATH.search(path))),
            float(any(c.isdigit() for c in last)), float(not segments), float(bool(parts.query)),
            *(float(bool(words & cue)) for cue in _URL_CUES.values())]


def _markup_part(cues: dict[str, Any] | None) -> list[float]:
    """The structured-data, og:type and element-count features of KIND_FEATURES (NaN without cues)."""
    width = len(_TYPE_CUES) + 1 + len(_OG_TYPES) + 1 + len(_ELEMENTS)
    if not cues:
        return [math.nan] * width
    types = set(cues.get("types", ()))
    og = cues.get("og", "")
    counts = cues.get("counts", {})
    return [*(float(bool(types & cue)) for cue in _TYPE_CUES.values()), float(len(types)),
            *(float(og == t or og.startswith(t + ".") or og.endswith(":" + t)) for t in _OG_TYPES), float(not og),
            *(math.log1p(counts.get(e, 0)) for e in _ELEMENTS)]


def kind_features(blocks: Sequence[Block], title: str, url: str | None, cues: dict[str, Any] | None
                  ) -> np.ndarray:
    """One row of PAGE_FEATURES (module docstring) for a segmented page: its blocks, its title channel, its
    canonical URL (None: unknown) and page_cues (None: unknown)."""
    title = title[:300]
    row = [*_block_part(blocks), *(float(bool(p.search(title))) for p in _TITLE_CUES.values()),
           float(len(title.split())), *_url_part(url), *_markup_part(cues)]
    return np.asarray(row, dtype=np.float64)


def decision_features(blocks: Sequence[Block] | None, probabilities: Sequence[float] | None,
                      kept: Sequence[int] | None, confidence: float | None) -> np.ndarray:
    """One row of DECISION_FEATURES: what a block extractor kept of the page's blocks and how sure it was (a
    listing keeps many short linked items of one group, an article a few long paragraphs); NaN without blocks."""
    if not blocks or probabilities is None or len(probabilities) != len(blocks):
        return np.full(len(DECISION_FEATURES), np.nan)
    n = len(blocks)
    chars = np.fromiter(map(_LEN, blocks), np.float64, n)
    p = np.asarray(probabilities, dtype=np.float64)
    total = max(float(chars.sum()), 1.0)
    rows = sorted(set(kept or ()))
    kept_chars = float(chars[rows].sum()) if rows else 0.0
    groups: Counter[str] = Counter()
    group_chars: Counter[str] = Counter()
    for i in rows:
        groups[blocks[i].tag_path] += 1
        group_chars[blocks[i].tag_path] += chars[i]
    links = sum(blocks[i].link_len for i in rows)
    k = max(len(rows), 1)
    return np.asarray([
        kept_chars / total, math.log1p(len(rows)) / 6, math.log1p(kept_chars) / 10,
        max(group_chars.values()) / max(kept_chars, 1.0) if rows else 0.0,
        max(groups.values()) / k if rows else 0.0, math.log1p(len(groups)) / 5,
        min(links / max(kept_chars, 1.0), 1.0), sum(blocks[i].is_list_item for i in rows) / k,
        sum(blocks[i].is_table_cell for i in rows) / k, float((p * chars).sum() / total), float((p > 0.5).mean()),
        float(confidence) if confidence is not None else np.nan, float(not rows),
    ], dtype=np.float64)
