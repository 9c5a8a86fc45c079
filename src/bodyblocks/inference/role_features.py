"""Role cues of a block as numbers for the boosted trees: is it a caption, a byline/dateline, an item of a list of
links, a promo, a comment, a table row, and where does it sit against the headline (issue 43, step 2).

    x = role_features(doc.blocks)        # (n, len(ROLE_NAMES)) float64, NaN where a cue does not apply

inference/gbt.py appends these columns to the trees' inputs when `gbt.role_features` is on. The cues read the
block's tag path (tag, id and up to three classes of its element and each ancestor, walk._path_segment), its
xpath (which blocks share a list, a parent or a table), its text, and inference/roles.py's rules:

  caption   a figure/figcaption element on the path; a caption/credit/photo class cue on the last three
            segments; a photo-credit phrase in the text ("Photo:", "Getty Images", "AP Photo", "图片来源");
  byline    roles.is_byline; a date and an author/source word in the text apart; a byline class cue on the
            block's element or its parent; an <address> on the path;
  list      the block's nearest ul/ol/dl/menu (by xpath) and its blocks: their number, the share of them that
            are all link text, their link density over characters, their mean length (NaN outside a list);
            the blocks that share the block's parent element: their number and link density;
  related   a class or id cue of a related/recommended/most-read/teaser list anywhere below <body>; a share,
            social, newsletter, tag or breadcrumb cue;
  promo     roles.is_promo; an ad-slot class or id anywhere below <body>;
  comments  roles.in_comments;
  table     a <tr>/<td>/<th> block; its row's place among its table's rows, their number, whether it is the
            first (NaN outside a table);
  headline  where the block sits against the page's first <h1>: its distance in blocks (signed, over the page's
            block count), whether it is after it, and the share of the page's text between the two (NaN on a
            page with no <h1>).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from bodyblocks.inference import roles
from bodyblocks.types import Block

ROLE_NAMES: tuple[str, ...] = (
    "role:figure",  # a figure or figcaption element on the tag path
    "role:caption_cue",  # caption/credit/photo class or id on the last three segments
    "role:credit_text",  # a photo-credit phrase in the text
    "role:byline",  # roles.is_byline
    "role:date",  # a date or time in the text (roles' pattern)
    "role:author_word",  # an author/source word in the text (roles' pattern)
    "role:byline_cue",  # byline/author/date/meta class or id on the block's element or its parent
    "role:address",  # an <address> on the tag path
    "role:list_items",  # log1p(blocks in the block's nearest list) / 4; NaN outside a list
    "role:list_link_only",  # share of those blocks whose text is all link text
    "role:list_link_density",  # their link characters / their characters
    "role:list_mean_len",  # log1p(their mean characters) / 8
    "role:siblings",  # log1p(blocks under the block's parent element) / 4
    "role:sibling_link_density",  # their link characters / their characters
    "role:related_cue",  # related/recommended/most-read/teaser class or id below <body>
    "role:share_cue",  # share/social/newsletter/tags/breadcrumb class or id below <body>
    "role:promo",  # roles.is_promo
    "role:ad_cue",  # an ad-slot class or id below <body>
    "role:comments",  # roles.in_comments
    "role:table_row",  # a tr/td/th block
    "role:row_position",  # (row - 1) / (rows - 1) in its table; NaN outside a table
    "role:table_rows",  # log1p(rows of its table) / 5
    "role:first_row",  # the first row of its table
    "role:from_h1",  # (index - first h1's index) / blocks, in [-1, 1]; NaN with no h1
    "role:after_h1",  # 1 after the first h1, 0 at or before it; NaN with no h1
    "role:text_since_h1",  # characters between the first h1 and the block / the page's (negative before it); NaN: no h1
)

_CAPTION_CUE = re.compile(r"caption|credit|figure|photo|image|img|picture|gallery|media|wp-caption|legend",
                          re.IGNORECASE)
_CREDIT_TEXT = re.compile(
    r"\b(?:photo|photograph|image|picture|credit|foto|fot\.|zdjęcie|φωτογραφία|фото)\s*(?:by\b|:|©)|\(ap photo|"
    r"getty images|\bap photo\b|\breuters/|/ ?reuters\b|\bafp\b ?/|shutterstock|©|图片来源|图/|摄影|圖片",
    re.IGNORECASE)
_RELATED_CUE = re.compile(
    r"related|recommend|more-?(?:stories|news|articles|from|on)|also|popular|trending|most-?(?:read|viewed|popular)"
    r"|read-?(?:more|next)|teaser|outbrain|taboola|sidebar|widget|headlines|latest",
    re.IGNORECASE)
_SHARE_CUE = re.compile(r"share|social|follow|newsletter|subscri|signup|sign-up|tags?\b|tag-?list|breadcrumb",
                        re.IGNORECASE)
_LIST_STEP = re.compile(r"/(?:ul|ol|dl|menu)\[\d+\]")
_TABLE_STEP = re.compile(r"/table\[\d+\]")
_ROW_STEP = re.compile(r"/tr\[(\d+)\]")


@lru_cache(maxsize=1 << 14)
def _segment_cues(segment: str) -> tuple[str, bool, bool, bool, bool, bool]:
    """tag, caption, byline, related, share and ad-slot cues of one tag-path segment's id and class tokens (none
    of the patterns spans two tokens, so a path's cue is any of its segments')."""
    tokens = roles._tokens(segment)
    words = " ".join(tokens)
    return (roles._tag(segment), bool(_CAPTION_CUE.search(words)), bool(roles._BYLINE_CLASS.search(words)),
            bool(_RELATED_CUE.search(words)), bool(_SHARE_CUE.search(words)),
            any(roles._AD_CLASS.search(t) for t in tokens))


@lru_cache(maxsize=1 << 14)
def _path_cues(tag_path: str) -> tuple[float, ...]:
    """figure, caption_cue, byline_cue, address, related_cue, share_cue, ad_cue of a tag path."""
    cues = [_segment_cues(s) for s in tag_path.split("/")]
    tags = [c[0] for c in cues]
    below = cues[tags.index("body") + 1 if "body" in tags else 0 :]
    return (
        float("figure" in tags or "figcaption" in tags),
        float(any(c[1] for c in cues[-3:])),
        float(any(c[2] for c in cues[-2:])),
        float("address" in tags),
        float(any(c[3] for c in below)),
        float(any(c[4] for c in below)),
        float(any(c[5] for c in below)),
    )


def _groups(keys: Sequence[str | None]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if k is not None:
            out.setdefault(k, []).append(i)
    return out


def _prefix(xpath: str, step: re.Pattern[str]) -> str | None:
    """The xpath up to and including its last step matching `step` (None: no such step)."""
    found = list(step.finditer(xpath))
    return xpath[: found[-1].end()] if found else None


def role_features(blocks: Sequence[Block]) -> np.ndarray:
    """ROLE_NAMES for each block of one page, in page order: (n, len(ROLE_NAMES)) float64."""
    n = len(blocks)
    col = {name: j for j, name in enumerate(ROLE_NAMES)}
    out = np.zeros((n, len(ROLE_NAMES)))
    if not n:
        return out
    text_len = np.array([b.text_len for b in blocks], dtype=np.float64)
    link_len = np.array([b.link_len for b in blocks], dtype=np.float64)
    link_only = np.array([b.in_link_only for b in blocks], dtype=np.float64)
    path_cols = [col[c] for c in ("role:figure", "role:caption_cue", "role:byline_cue", "role:address",
                                  "role:related_cue", "role:share_cue", "role:ad_cue")]
    out[:, path_cols] = [_path_cues(b.tag_path) for b in blocks]
    for i, b in enumerate(blocks):
        text = b.text
        out[i, col["role:credit_text"]] = bool(_CREDIT_TEXT.search(text))
        out[i, col["role:byline"]] = roles.is_byline(b)
        out[i, col["role:date"]] = bool(roles._DATE.search(text))
        out[i, col["role:author_word"]] = bool(roles._AUTHOR.search(text))
        out[i, col["role:promo"]] = roles.is_promo(b)
        out[i, col["role:comments"]] = roles.in_comments(b)
        out[i, col["role:table_row"]] = b.tag in ("tr", "td", "th") or b.is_table_cell

    def group_stats(members: list[int]) -> tuple[float, float, float]:
        chars = text_len[members].sum()
        return (np.log1p(len(members)) / 4, link_len[members].sum() / chars if chars else 0.0,
                float(link_only[members].mean()))

    lists = out[:, [col["role:list_items"], col["role:list_link_only"], col["role:list_link_density"],
                    col["role:list_mean_len"]]]
    lists[:] = np.nan
    for members in _groups([_prefix(b.xpath, _LIST_STEP) for b in blocks]).values():
        size, density, only = group_stats(members)
        lists[members] = (size, only, density, np.log1p(text_len[members].mean()) / 8)
    out[:, [col["role:list_items"], col["role:list_link_only"], col["role:list_link_density"],
            col["role:list_mean_len"]]] = lists
    for members in _groups([b.xpath.rsplit("/", 1)[0] for b in blocks]).values():
        size, density, _ = group_stats(members)
        out[members, col["role:siblings"]] = size
        out[members, col["role:sibling_link_density"]] = density

    table = out[:, [col["role:row_position"], col["role:table_rows"], col["role:first_row"]]]
    table[:] = np.nan
    for key, members in _groups([_prefix(b.xpath, _TABLE_STEP) for b in blocks]).items():
        rows = [m.group(1) if (m := _ROW_STEP.search(blocks[i].xpath, len(key))) else "" for i in members]
        order = {r: k for k, r in enumerate(dict.fromkeys(rows))}  # rows in page order
        count = len(order)
        for i, r in zip(members, rows, strict=True):
            table[i] = (order[r] / (count - 1) if count > 1 else 0.0, np.log1p(count) / 5, float(order[r] == 0))
    out[:, [col["role:row_position"], col["role:table_rows"], col["role:first_row"]]] = table

    heads = [i for i, b in enumerate(blocks) if b.heading_level == 1]
    h1_cols = [col["role:from_h1"], col["role:after_h1"], col["role:text_since_h1"]]
    if not heads:
        out[:, h1_cols] = np.nan
    else:
        h = heads[0]
        idx = np.arange(n)
        total = text_len.sum() or 1.0
        cum = np.concatenate(([0.0], np.cumsum(text_len)))  # cum[i]: characters of blocks before i
        out[:, col["role:from_h1"]] = (idx - h) / n
        out[:, col["role:after_h1"]] = idx > h
        between = np.where(idx > h, cum[idx] - cum[h + 1], np.where(idx < h, cum[idx + 1] - cum[h], 0.0))
        out[:, col["role:text_since_h1"]] = between / total
    return out
