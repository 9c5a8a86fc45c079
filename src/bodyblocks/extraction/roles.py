"""Roles of kept blocks that are on the article's page but not its body: the byline/dateline, the standfirst, a
promo line, the captions, the comments. The decision rule (decision.py) takes them out of the body text.

    headline_copies(blocks, keep, title)  # kept blocks that repeat the headline's text (shown once, as the title)
    byline_blocks(blocks, keep, head)     # short date/source/author lines next to the headline
    standfirst_block(blocks, keep, head, descriptions)  # the summary paragraph under the headline (the dek)
    is_promo(block)                       # "推广：…", "Advertisement", a short line in an ad-slot container
    is_caption(block)                     # a figure's caption or photo credit, a gallery's counted caption
    in_comments(block)                    # inside a comment container (#comments, .comment-list, disqus, respond)
    in_sidebar(block)                     # inside a sidebar, a widget area or a rail (#sidebar, .widget, #rightRail)
    comment_sections(blocks, keep)        # the blocks under a comments heading ("3 Responses", h2#comments)
    is_comment_text(block)                # a comment's own text there (not a name, a date, a "Reply" link)
    page_descriptions(root)               # the page's <meta> descriptions, which the standfirst cue reads

Cues come from the block's text and its tag path (the tag, id and classes of the block's element and its
ancestors, segment.py), so they read the same on every site:
  byline   at most BYLINE_CHARS characters, among the first BYLINE_WINDOW kept blocks after the headline (or the
           first kept ones on a page without one), with two of: a date or time; a source/author word
           ("By …", "来源：", "作者：", "Posted", "Updated", …); a class or id cue of its own element or its
           parent's (byline, author, date, time, meta, source, …). A line with an author word and a date, or a
           class cue with either, is a byline; a date alone is not (a heading such as "May 2005" stays);
  promo    at most PROMO_CHARS characters and starting with an advertising label, or in an element whose own
           class or id is an ad slot (ad-slot, advert, sponsor, promo);
  key points a story's key points box (key_points): a line that is its label ("STORY HIGHLIGHTS", "Key points",
           "本文要点") and the run of short list items right after it under the label's parent element;
  caption  a photo-credit or gallery-caption text ("Photo: …", "(AP Photo/…)", "… Getty Images", "图片来源：", "图：",
           "1of4 …"); a block whose own element or parent is a figcaption or caption, or has an id or class naming
           one ("wp-caption-text", "imageCaption", "cutline", "photo-credit"; not "authorCredit"), no heading; a
           block of at most CAPTION_CHARS (no heading) further down such an element, or of at most FIGURE_CHARS
           under a <figure> or in an element named for an image ("imageByline", "photo-description"); a
           blockquote, code, list or table under them stays what it is, and so does a block that is mostly
           link text (a gallery's or a page's controls: "View larger image", "Email to a friend"), and a
           paragraph among more than CAPTION_PARAGRAPHS beside it in an element named for a caption (a product's
           description in a "caption" box is a run of paragraphs, no caption);
  comments the block or an ancestor below <body> has an id or class token naming a comment thread (trackbacks and
           pingbacks, a blog's replies from other blogs, too: div.trackbacks, li.pingback, though their own
           names head no comments section); or, on an
           article, it is or follows a comments heading (comment_sections: at least ARTICLE_BEFORE_COMMENTS kept
           characters before it; the blocks after it in its parent element, up to the next heading of its level or
           above): at most COMMENT_HEADING_CHARS characters, less than half of them link text, and either its own
           element's id or class names a comment thread (h2#comments, div.comments), or it is an <h1>..<h6> opening
           with a counted or quoted comments title or a reply form's ("3 Responses to …", "One thought on “…”",
           "Leave a Reply", "网友评论"), or its whole text is a comments heading whatever its element ("Comments",
           "Comments (12)", "Reader comments", "评论") (a blog whose comments are siblings of its post's
           paragraphs, under no container of their own; not on a thread, whose replies are its body);
  standfirst the first kept block after the headline (bylines left out), of STANDFIRST_CHARS characters, with at
           most STANDFIRST_LINKS link text, no list item, table cell, <h1>, figure or caption, not opening with a
           news dateline ("LONDON (Reuters) -", "本报讯"), and followed by at least STANDFIRST_BODY kept characters
           outside comment containers; it is the standfirst when one of:
           - an id or class token of its own element, or of an ancestor it does not share with the next kept
             block, names a dek (standfirst, dek, deck, summary, subtitle, subhead, lede, lead, intro, excerpt,
             teaser, abstract, strapline, synopsis, sapo, chapo, digest, …) and none names a caption, an image,
             a byline or a menu; a sibling of the body's paragraphs qualifies only through its own element's
             class, and a token made from its own text (a heading's anchor) does not count;
           - its text opens with a summary label (摘要：, 导语：, 导读：, 核心提示：, 内容提要：, 编者按：);
           - its text matches one of the page's <meta> descriptions (description, og:description,
             twitter:description; rapidfuzz ratio >= DESCRIPTION_MATCH, or the start of the block against a
             description cut short), it reads as a sentence (ends with . ! ? 。 … or has at least 80 characters),
             and either it sits with the headline (its deepest common ancestor with the headline is below the one
             with the next kept block) or it is an <h2>..<h6> that is no sibling of the next kept block. A first
             body paragraph that repeats the description (most news sites) sits with the body, and stays body.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from bodyblocks.extraction import role_cues as cues
from bodyblocks.types import Block, Document

BYLINE_CHARS = 100  # white space excluded
BYLINE_WINDOW = 3  # kept blocks after the headline looked at
PROMO_CHARS = 40
CAPTION_CHARS = 400  # a block under a caption path longer than this is the article's (a figure wrapping it)
FIGURE_CHARS = 150  # a block under <figure> but no <figcaption> is a caption up to this long
CAPTION_PARAGRAPHS = 2  # <p>s beside a block in an element named for a caption, at most (a caption and its credit)
BUTTON_CHARS = 10  # a link-only last block of the body at most this long is a button ("Follow", "Share", "关注")
STANDFIRST_CHARS = (40, 400)  # white space excluded
STANDFIRST_LINKS = 0.3  # link density at most
STANDFIRST_BODY = 200  # kept characters after it, outside comment containers, at least
DESCRIPTION_MATCH = 90.0  # rapidfuzz ratio (0-100) of a block's text to a meta description
DESCRIPTIONS = "descriptions"  # Document.extra's key of the page's meta descriptions (page_descriptions)
_MAX_DESCRIPTIONS = 4

_SEGMENT = re.compile(r"([.#])([^.#]+)")
_WORD_BREAK = re.compile(r"[-_\s]+")
_CAMEL = re.compile(r"([a-z])([A-Z])")
_SENTENCE_END = re.compile(r"[.!?。！？…»\"”')）]\s*$")
_SPACE = re.compile(r"\s+")
_LETTERS = re.compile(r"[^\W\d_]+")


def _tokens(segment: str) -> list[str]:
    """The id and class tokens of one tag-path segment ("div#main.post.entry" -> ["main", "post", "entry"])."""
    return [m.group(2) for m in _SEGMENT.finditer(segment)]


def _tag(segment: str) -> str:
    """The tag of one tag-path segment ("div#main.post" -> "div")."""
    return segment.split(".", 1)[0].split("#", 1)[0]


def _own_cues(block: Block, levels: int = 2) -> str:
    """The id and class tokens of the block's element and its parents, `levels` segments in all."""
    return " ".join(t for seg in block.tag_path.split("/")[-levels:] for t in _tokens(seg))


def _flat(text: str) -> str:
    """Text compared as a copy of another: white space removed, case folded."""
    return _SPACE.sub("", text).casefold()


def headline_copies(blocks: Sequence[Block], keep: np.ndarray, title: str) -> list[int]:
    """The kept blocks whose text is the headline's (`title`: the headline block's text, or the title channel's on
    a page without one) over again, white space and case aside: a page that shows its headline twice (a header
    and the article's own <h1>, a title <div> and a heading) would have it in its body text too."""
    flat = _flat(title)
    if not flat:
        return []
    near = len(flat) // 2 + 2  # text_len counts characters as the walk does: only a block about as long is read
    return [int(i) for i in np.flatnonzero(keep)
            if abs(blocks[i].text_len - len(flat)) <= near and _flat(blocks[i].text) == flat]


def is_byline(block: Block) -> bool:
    """A short date/source/author line (module docstring), wherever it is."""
    if not 0 < block.text_len <= BYLINE_CHARS:
        return False
    date, author = bool(cues.DATE.search(block.text)), bool(cues.AUTHOR.search(block.text))
    cue = bool(cues.BYLINE_CLASS.search(_own_cues(block)))
    return (date and author) or (cue and (date or author))


def byline_blocks(blocks: Sequence[Block], keep: np.ndarray, head: int | None) -> list[int]:
    """The kept bylines/datelines next to the headline: among the first BYLINE_WINDOW kept blocks after it (or
    the page's first kept blocks when it has none)."""
    start = -1 if head is None else head
    near = [int(i) for i in np.flatnonzero(keep) if i > start][:BYLINE_WINDOW]
    return [i for i in near if is_byline(blocks[i])]


def is_promo(block: Block) -> bool:
    """A short advertising line: an ad label at its start, or its own element an ad slot."""
    if not 0 < block.text_len <= PROMO_CHARS:
        return False
    if cues.PROMO_TEXT.search(block.text):
        return True
    own = block.tag_path.rsplit("/", 1)[-1]
    return any(cues.AD_CLASS.search(t) for t in _tokens(own))


KEY_POINTS_LABEL = 40  # a key points box's label, at most
KEY_POINT_CHARS = 300  # each of its items, at most


def key_points(blocks: Sequence[Block]) -> np.ndarray:
    """A story's key points box, as a mask: a line that is its label ("STORY HIGHLIGHTS", "Highlights", "Key points",
    "Key takeaways", "要点", "本文要点", "内容要点", "新闻要点"; at most KEY_POINTS_LABEL characters, less than half of
    them link text, no list item) and the run of list items right after it under the label's parent element, when
    every item is at most KEY_POINT_CHARS; a label with no such item after it (a section heading over the article's
    own paragraphs), or whose list holds a longer item (the article's own list), heads none."""
    out = np.zeros(len(blocks), bool)
    for i, block in enumerate(blocks):
        if not 0 < block.text_len <= KEY_POINTS_LABEL or block.link_density >= 0.5 or block.is_list_item:
            continue
        if cues.KEY_POINTS.fullmatch(block.text.strip().rstrip(":：").strip()) is None:
            continue
        parent = block.xpath[: block.xpath.rfind("/") + 1]
        j = i + 1
        while j < len(blocks) and blocks[j].is_list_item and blocks[j].xpath.startswith(parent):
            j += 1
        if j > i + 1 and all(b.text_len <= KEY_POINT_CHARS for b in blocks[i + 1: j]):
            out[i:j] = True
    return out


def gallery_counter(text: str) -> bool:
    """Whether the text opens with a gallery counter ("1of4", "3 of 12")."""
    m = cues.GALLERY_COUNTER.match(text)
    return m is not None and 0 < int(m.group(1)) <= int(m.group(2))


def _credit_hint(text: str) -> bool:
    low = text.lower()
    return any(h in low for h in cues.CREDIT_HINTS)


def is_caption(block: Block) -> bool:
    """A figure's caption or photo credit, or a gallery's counted caption (module docstring, caption)."""
    text = block.text.strip()
    if not text:
        return False
    if block.text_len <= CAPTION_CHARS and _credit_hint(text) and (cues.CREDIT.search(text[:120]) or (
            len(text) > 120 and cues.CREDIT.search(text[-120:]))):
        return True
    if block.text_len > 8 and gallery_counter(text):
        return True
    if block.link_density >= 0.5:  # "View larger image", "Email to a friend", "More pictures: < Prev | Next >"
        return False
    near_tag, near_tokens, tags, path_tokens, own_image = _caption_path(block.tag_path)
    # its own element or its parent's: a figcaption or caption tag, or a class or id naming one around no run of
    # paragraphs (a product's description is no caption)
    named = near_tag or (any(not _slug_of(t, text) for t in near_tokens)
                         and block.sibling_paragraphs <= CAPTION_PARAGRAPHS)
    if named and tags[-1] not in cues.NOT_CAPTION_TAGS and not block.heading_level:  # (a lead in an <h2> is no caption)
        return True
    if block.text_len > CAPTION_CHARS or block.heading_level or not cues.NOT_CAPTION_TAGS.isdisjoint(tags):
        return False
    if "figcaption" in tags or ("figure" in tags and block.text_len <= FIGURE_CHARS):
        return True
    if any(not _slug_of(t, text) for t in path_tokens) and block.sibling_paragraphs <= CAPTION_PARAGRAPHS:
        return True
    return block.text_len <= FIGURE_CHARS and own_image


@lru_cache(maxsize=1 << 16)
def _caption_path(tag_path: str) -> tuple[bool, tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]:
    """is_caption's cues of a tag path (the blocks of a page share a few hundred): a figcaption or caption tag in
    its last two segments, their id/class tokens that name a caption, every segment's tag, every segment's tokens
    that name a caption, and whether its own element's tokens name an image."""
    segments = tag_path.split("/")
    names = [t for seg in segments for t in _tokens(seg)]
    near = [t for seg in segments[-2:] for t in _tokens(seg)]

    def caption_named(tokens: list[str]) -> tuple[str, ...]:
        return tuple(t for t in tokens if cues.CAPTION_TOKEN.search(t) and not cues.NOT_CAPTION_TOKEN.search(t))

    return (any(_tag(seg) in ("figcaption", "caption") for seg in segments[-2:]), caption_named(near),
            tuple(_tag(seg) for seg in segments), caption_named(names),
            any(cues.IMAGE_TOKEN.search(t) for t in _tokens(segments[-1])))


COMMENT_CHARS = 20  # a comment's text, at least (a commenter's name, "Reply", "3 hours ago" are shorter)


def is_comment_text(block: Block) -> bool:
    """Whether a block in a comment container is a comment's text: no heading, at least COMMENT_CHARS, less than
    half of it link text."""
    return block.text_len >= COMMENT_CHARS and not block.heading_level and block.link_density < 0.5


COMMENT_HEADING_CHARS = 60  # a comments heading, at most ("37 Responses to “Why the web needs …”")


def comment_heading(block: Block) -> bool:
    """Whether the block heads readers' comments (module docstring: comments)."""
    if block.text_len > COMMENT_HEADING_CHARS or block.link_density >= 0.5 or not block.text_len:
        return False
    text = block.text.strip()
    if block.heading_level and cues.COMMENT_HEADING.match(text) is not None:
        return True
    return cues.COMMENT_LINE.fullmatch(text) is not None or _own_names_comments(block.tag_path)


@lru_cache(maxsize=1 << 16)
def _own_names_comments(tag_path: str) -> bool:
    """Whether the last segment of a tag path (the block's own element) has an id or class naming comments (not a
    trackback's or pingback's: cues.COMMENT_CONTAINER)."""
    return cues.COMMENT_TOKEN.search(tag_path, tag_path.rfind("/")) is not None


ARTICLE_BEFORE_COMMENTS = 200  # kept characters before a comments heading, at least (a kicker or a meta line is none)


def comment_sections(blocks: Sequence[Block], keep: np.ndarray) -> np.ndarray:
    """The comment sections of an article, as a mask: a comments heading (comment_heading) with at least
    ARTICLE_BEFORE_COMMENTS kept characters of the article before it (a kicker "Comment" or a "2 comments" meta line
    under the headline heads none), and the blocks after it in its parent element, up to the next heading of its level
    or above that is no comments heading (a tutorial's "Comments" section ends at its "Variables"; a line's level:
    any heading's)."""
    out = np.zeros(len(blocks), bool)
    before = 0
    i = 0
    while i < len(blocks):
        block = blocks[i]
        if before >= ARTICLE_BEFORE_COMMENTS and block.text_len <= COMMENT_HEADING_CHARS and comment_heading(block):
            cut = block.xpath.rfind("/")
            parent = block.xpath[: cut + 1] if cut > 0 else "/"
            level = block.heading_level or 6
            j = i + 1
            while j < len(blocks) and blocks[j].xpath.startswith(parent) and not (
                    0 < blocks[j].heading_level <= level and not comment_heading(blocks[j])):
                j += 1
            out[i:j] = True
            i = j
            continue
        if keep[i]:
            before += block.text_len
        i += 1
    return out


def in_comments(block: Block) -> bool:
    """Whether the block sits in a comment container (an id or class token below <body> names one)."""
    return _in_comments(block.tag_path)


@lru_cache(maxsize=1 << 16)
def _in_comments(tag_path: str) -> bool:
    """in_comments of a tag path (the blocks of a page share a few hundred): tokens below the body segment."""
    start = _below_body(tag_path)
    return start >= 0 and cues.COMMENT_CONTAINER.search(tag_path, start) is not None


def in_sidebar(block: Block) -> bool:
    """Whether the block sits in a sidebar, a widget area or a news site's rail or right column (an id or a whole
    class name below <body> names one)."""
    return _in_sidebar(block.tag_path)


@lru_cache(maxsize=1 << 16)
def _in_sidebar(tag_path: str) -> bool:
    """in_sidebar of a tag path: ids and class names below the body segment (a theme's body class "sidebar" names
    its layout, not a widget)."""
    start = _below_body(tag_path)
    return start >= 0 and cues.SIDEBAR.search(tag_path, start) is not None


def _below_body(tag_path: str) -> int:
    """Where a tag path's segments below the body segment start (the whole path without a body segment; -1: the
    block is the body's own text, nothing below it)."""
    body = tag_path.find("/body")
    return tag_path.find("/", body + 1) if body >= 0 else 0


def page_descriptions(root: Any) -> tuple[str, ...]:
    """The page's <meta> descriptions (description, og:description, twitter:description, dc.description) in <head>,
    white space collapsed, each once; () without a parsed tree (segment.segment_tree's lxml root)."""
    if root is None:
        return ()
    head = root.find("head")
    found: list[str] = []
    for el in (root if head is None else head).iter("meta"):
        key = (el.get("name") or el.get("property") or "").strip().lower()
        if key in cues.DESCRIPTION_NAMES:
            text = " ".join((el.get("content") or "").split())
            if text and text not in found:
                found.append(text)
                if len(found) == _MAX_DESCRIPTIONS:
                    break
    return tuple(found)


def add_descriptions(doc: Document, root: Any) -> Document:
    """doc with the page's meta descriptions in doc.extra[DESCRIPTIONS] (the standfirst's cue); returned."""
    doc.extra[DESCRIPTIONS] = page_descriptions(root)
    return doc


def _words(token: str) -> list[str]:
    """The words of an id or class token: "article-subHead_2" -> ["article", "sub", "head", "2"]."""
    return _WORD_BREAK.split(_CAMEL.sub(r"\1-\2", token).lower())


def _names_other(token: str) -> bool:
    """Whether an id or class token names a caption, an image, a byline, a menu, … (no dek)."""
    return cues.NOT_DEK.search(token) is not None or not cues.NOT_DEK_WORDS.isdisjoint(_words(token))


def _is_dek_token(token: str) -> bool:
    """Whether an id or class token names a dek."""
    return not cues.DEK_WORDS.isdisjoint(_words(token)) or cues.DEK_INSIDE.search(token) is not None


def _slug_of(token: str, text: str) -> bool:
    """Whether an id or class token is made from the block's own text (a heading's anchor,
    "introduction-to-clematis-pruning" on "Introduction to Clematis Pruning: …"): its first three words open it."""
    words = _LETTERS.findall(token.lower())
    return len(words) >= 3 and " ".join(_LETTERS.findall(text[:200].casefold())).startswith(" ".join(words[:3]))


def common_depth(a: str, b: str) -> int:
    """Segments two xpaths (or tag paths) share from the root."""
    sa, sb = a.split("/"), b.split("/")
    k = 0
    while k < min(len(sa), len(sb)) and sa[k] == sb[k]:
        k += 1
    return k


def matches_description(text: str, descriptions: Sequence[str]) -> bool:
    """Whether a block's text is one of the page's meta descriptions (DESCRIPTION_MATCH), or starts as a long one
    that was cut short ("…") does."""
    from rapidfuzz import fuzz

    mine = _SPACE.sub(" ", text).strip().casefold()
    for description in descriptions:
        d = _SPACE.sub(" ", description).strip().casefold().rstrip("….").rstrip()
        if len(d) < 20:
            continue
        if fuzz.ratio(mine, d, score_cutoff=DESCRIPTION_MATCH):
            return True
        if len(d) >= 80 and len(d) < len(mine) and fuzz.ratio(mine[: len(d)], d, score_cutoff=DESCRIPTION_MATCH):
            return True
    return False


def standfirst_block(blocks: Sequence[Block], keep: np.ndarray, head: int | None, descriptions: Sequence[str] = (),
                     comments: np.ndarray | None = None) -> int | None:
    """The kept block that is the page's standfirst (module docstring), or None. `keep`: the kept blocks, the
    headline and the bylines left out; `comments`: the blocks in comment containers (in_comments), whose characters
    do not count as the body after it."""
    if head is None:
        return None
    after = [int(i) for i in np.flatnonzero(keep) if i > head]
    if len(after) < 2:
        return None
    cand, rest = after[0], after[1:]
    block, nxt = blocks[cand], blocks[rest[0]]
    low, high = STANDFIRST_CHARS
    if not low <= block.text_len <= high or block.link_density > STANDFIRST_LINKS or block.is_list_item \
            or block.is_table_cell or block.heading_level == 1 or cues.DATELINE.match(block.text):
        return None
    body = sum(blocks[i].text_len for i in rest if comments is None or not comments[i])
    if body < STANDFIRST_BODY:
        return None
    # its own segments: the element and the ancestors it does not share with the next kept block
    shared = common_depth(block.xpath, nxt.xpath)
    own = block.tag_path.split("/")[max(shared - 1, 0):]  # an xpath starts with "/": one segment more
    if any(_tag(seg) in ("figure", "figcaption") for seg in own):
        return None
    tokens = [t for seg in own for t in _tokens(seg) if not _slug_of(t, block.text)]
    if any(_names_other(t) for t in tokens):
        return None
    if any(_is_dek_token(t) for t in tokens) or cues.SUMMARY_LABEL.match(block.text):
        return cand
    if not descriptions or not (_SENTENCE_END.search(block.text) or block.text_len >= 80):
        return None
    with_headline = common_depth(block.xpath, blocks[head].xpath) > shared
    own_heading = block.heading_level >= 2 and block.xpath.rsplit("/", 1)[0] != nxt.xpath.rsplit("/", 1)[0]
    if (with_headline or own_heading) and matches_description(block.text, descriptions):
        return cand
    return None
