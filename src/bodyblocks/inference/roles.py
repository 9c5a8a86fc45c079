"""Roles of kept blocks that are on the article's page but not its body: the byline/dateline, a promo line, the
comments. The decision rule (decision.py) takes them out of the body text.

    byline_blocks(blocks, keep, head)     # short date/source/author lines next to the headline
    is_promo(block)                       # "推广：…", "Advertisement", a short line in an ad-slot container
    in_comments(block)                    # inside a comment container (#comments, .comment-list, disqus, respond)

Cues come from the block's text and its tag path (the tag, id and classes of the block's element and its
ancestors, segment.py), so they read the same on every site:
  byline   at most BYLINE_CHARS characters, among the first BYLINE_WINDOW kept blocks after the headline (or the
           first kept ones on a page without one), with two of: a date or time; a source/author word
           ("By …", "来源：", "作者：", "Posted", "Updated", …); a class or id cue of its own element or its
           parent's (byline, author, date, time, meta, source, …). A line with an author word and a date, or a
           class cue with either, is a byline; a date alone is not (a heading such as "May 2005" stays);
  promo    at most PROMO_CHARS characters and starting with an advertising label, or in an element whose own
           class or id is an ad slot (ad-slot, advert, sponsor, promo);
  comments the block or an ancestor below <body> has an id or class token naming a comment thread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from bodyblocks.types import Block

BYLINE_CHARS = 100  # white space excluded
BYLINE_WINDOW = 3  # kept blocks after the headline looked at
PROMO_CHARS = 40
BUTTON_CHARS = 10  # a link-only last block of the body at most this long is a button ("Follow", "Share", "关注")

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b|\b\d{1,2}:\d{2}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|\b\d{{1,2}}\.?\s+{_MONTH}\s+\d{{4}}",
    re.IGNORECASE)
_AUTHOR = re.compile(
    r"^\s*(?:by|von|par|por|przez|от)\s+\S|来源\s*[:：]|作者\s*[:：]|编辑\s*[:：]|记者|发布时间|发表于|時間\s*[:：]|时间\s*[:：]"
    r"|\b(?:posted|published|updated|last modified|written by|autor|źródło|автор|источник|πηγή|συντάκτης)\b",
    re.IGNORECASE)
_BYLINE_CLASS = re.compile(
    r"byline|author|dateline|\bdate|time|posted|pubdate|published|meta|source|credit|article-?info|post-?info",
    re.IGNORECASE)
_PROMO_TEXT = re.compile(
    r"^\s*(?:推广|广告|赞助|advertisement|sponsored|promoted|anzeige|reklama|реклама|διαφήμιση)\s*[:：|\-]?",
    re.IGNORECASE)
_AD_CLASS = re.compile(r"(?:^|[-_ ])(?:ad|ads|advert\w*|sponsor\w*|promo\w*)(?:$|[-_ ])", re.IGNORECASE)
# an id or class token (between "." or "#" and the next ".", "#", "/" or the end) that names a comment thread
_COMMENT_TOKEN = re.compile(
    r"[.#](?:comments?|comment-?(?:list|body|content|text|area|section|thread|wrapper|container|s-area|s-section"
    r"|s-list|s-wrapper|s-container|item)|commentlist|replies|disqus[^./#]*|dsq-[^./#]+|respond|fb-comments"
    r"|(?:user|article|post|reader)-comments?)(?=[.#/]|$)",
    re.IGNORECASE)
_SEGMENT = re.compile(r"([.#])([^.#]+)")


def _tokens(segment: str) -> list[str]:
    """The id and class tokens of one tag-path segment ("div#main.post.entry" -> ["main", "post", "entry"])."""
    return [m.group(2) for m in _SEGMENT.finditer(segment)]


def _own_cues(block: Block, levels: int = 2) -> str:
    """The id and class tokens of the block's element and its parents, `levels` segments in all."""
    return " ".join(t for seg in block.tag_path.split("/")[-levels:] for t in _tokens(seg))


def is_byline(block: Block) -> bool:
    """A short date/source/author line (module docstring), wherever it is."""
    if not 0 < block.text_len <= BYLINE_CHARS:
        return False
    date, author = bool(_DATE.search(block.text)), bool(_AUTHOR.search(block.text))
    cue = bool(_BYLINE_CLASS.search(_own_cues(block)))
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
    if _PROMO_TEXT.search(block.text):
        return True
    own = block.tag_path.rsplit("/", 1)[-1]
    return any(_AD_CLASS.search(t) for t in _tokens(own))


def in_comments(block: Block) -> bool:
    """Whether the block sits in a comment container (an id or class token below <body> names one)."""
    return _in_comments(block.tag_path)


@lru_cache(maxsize=1 << 16)
def _in_comments(tag_path: str) -> bool:
    """in_comments of a tag path (the blocks of a page share a few hundred): tokens below the body segment."""
    body = tag_path.find("/body")
    below = tag_path[tag_path.find("/", body + 1):] if body >= 0 and tag_path.find("/", body + 1) >= 0 else (
        "" if body >= 0 else tag_path)
    return _COMMENT_TOKEN.search(below) is not None
