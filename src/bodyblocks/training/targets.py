"""Training targets that follow the project's convention of what the body is (docs/CONVENTION.md), whatever the
source's gold held: every block of a training page gets a role, and the body target is the gold's label where
the role is `body`, 0 elsewhere (a caption, a related list, a byline are never body).

    roles = block_roles(blocks, gold_labels, title, descriptions=(), l3s=None)
    targets = convention_targets(roles, gold_labels)
    roles = page_roles(page, doc, root, gold_labels)   # a dataset page: its L3S classes and meta descriptions read

ROLES: body, headline, standfirst, byline, caption, related, promo, share, comment, navigation, sidebar, key_points,
other. The first cue that fires names the role:
  1. L3S-GN1's own block classes where the page has them (labels.annotated_classes): 1 headline, 4 related,
     5 comments; 3 (supplemental: bylines, datelines, agency and copyright lines, captions, key points) is never
     body: the cues below name it, else `other`;
  2. comment: in a comment container (extraction.roles.in_comments), unless the page is a thread, whose posts are
     its body, by the decision rule's test (extraction.kinds.thread_posts) on the gold body: some of it in comment
     containers and less than MIN_ARTICLE characters outside them, or the page's structured data names a forum
     posting or a Q&A page (kinds.thread_cue) and the gold's text in comment containers is at least POST_SHARE of
     the text outside them;
  3. headline: the block that matches the page's title (extraction/headline.headline_block, the gold body as kept);
  4. caption: a photo-credit or gallery-caption text ("Photo: …", "(AP Photo/…)", "… Getty Images", "图片来源：",
     "图：", "1of4 …"); a block whose own element or parent is a figcaption or caption, or has an id or class
     naming one ("wp-caption-text", "imageCaption", "cutline", "photo-credit"; not "authorCredit"), no heading; a
     block of at most CAPTION_CHARS (no heading) further down such an element, or of at most FIGURE_CHARS under a
     <figure> or in an element named for an image ("imageByline", "photo-description"); a blockquote, code, list
     or table under them stays what it is, and so does a block that is mostly link text (a gallery's controls);
  5. byline: extraction.roles.byline_blocks next to the headline in the gold body, or a short line whose own
     element's class names an author or byline (extraction.roles.is_byline);
  6. standfirst: extraction.roles.standfirst_block of the gold body (the page's meta descriptions as its cue);
  6b. key_points: a story's key points box (extraction.roles.key_points: "STORY HIGHLIGHTS" and its short list);
     then sidebar: a block in a sidebar, widget area or rail (extraction.roles.in_sidebar); each unless the gold
     body's blocks among them hold more than the decision rule's share (KEY_POINTS_SHARE, SIDEBAR_SHARE) of the
     gold body's characters that no role named before (the key points' too, where they are no body): then the
     page's content is them, as at extraction (decision.py, step 7);
  7. promo: extraction.roles.is_promo, or a newsletter, subscription or app prompt of at most PROMPT_CHARS;
  8. share: a share/like/follow/tag line of at most SHARE_CHARS ("Share this:", "Tags: …", "分享到", "标签：");
  9. related: a "Related"/"Read more"/"相关阅读" label, or a block with at least RELATED_LINKS link text whose path
     names a related/recommended/popular list; navigation: the same under <nav> or a menu/breadcrumb/pagination
     element; cookie notices and footers' copyright lines are `other`;
 10. the rest: body where the gold holds it (L3S: class 2), `other` where it does not.
On a listing or collection page (wcxb-dev's page types) the list the gold holds is the body: cue 9 is not read
on its blocks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from bodyblocks.extraction import kinds
from bodyblocks.extraction import roles as rules
from bodyblocks.extraction.decision import KEY_POINTS_SHARE, MIN_ARTICLE, SIDEBAR_SHARE, is_minor
from bodyblocks.extraction.headline import headline_block
from bodyblocks.extraction.roles import is_caption
from bodyblocks.training.labels import annotated_classes
from bodyblocks.types import Block, Document, Page

ROLES = ("body", "headline", "standfirst", "byline", "caption", "related", "promo", "share", "comment",
         "navigation", "sidebar", "key_points", "other")
ROLES_VERSION = "5"  # bump when roles change: the convention's dataset caches key on it
PROMPT_CHARS = 120  # a prompt's text, its verb within the first PROMPT_START characters
PROMPT_START = 40
SHARE_CHARS = 80
RELATED_LINKS = 0.5  # link density at least, for a block in a related or navigation list
L3S_ROLES = {1: "headline", 4: "related", 5: "comment"}
L3S_BODY = 2  # full text: body unless a cue below names the block otherwise
L3S_SUPPLEMENTAL = 3
LISTING_TYPES = frozenset({"collection", "listing"})  # page types (wcxb-dev) whose list is the body

_PROMPT = re.compile(
    r"\b(?:sign up|subscribe (?:to|now|today|for)|download (?:our|the) app|get (?:the|our) app|join our (?:newsletter"
    r"|mailing list|community)|follow us on|register now|start your free trial)\b"
    r"|订阅|下载(?:客户端|app|APP)|扫码|扫一扫|关注(?:我们|微信|公众号)|微信公众号|点击下载", re.IGNORECASE)
_SHARE = re.compile(
    r"^\s*(?:share|tweet|e-?mail|print|like|follow|save|share (?:this|on \w+|article|story)|follow us|like this)"
    r"\s*[:：!]?\s*(?:loading\.*)?$|^\s*(?:share this|share on|tags?|topics?|filed under|categories|keywords"
    r"|posted in)\s*[:：]|^\s*(?:分享到|分享|收藏|点赞|转发|打印|标签|关键词|关键字)\s*(?:[:：]|$)",
    re.IGNORECASE)
_SHARE_TOKEN = re.compile(r"share|sharing|social|sociable|addthis|sharethis|tags?(?:-?list|-?links)?$|keywords",
                          re.IGNORECASE)
_RELATED_LABEL = (r"(?:related(?: articles| stories| posts| links| content| news| coverage)?|read more|see also"
                  r"|also read|more (?:from|on|stories|news)\b.{0,40}|you (?:may|might) also like"
                  r"|recommended(?: for you)?"
                  r"|most (?:read|popular|viewed)|trending(?: now)?|popular(?: stories| posts)?"
                  r"|相关(?:阅读|新闻|文章|链接|报道|推荐)|延伸阅读|推荐阅读|热门(?:文章|新闻|推荐)|猜你喜欢|更多(?:新闻|阅读))")
_RELATED_ALONE = re.compile(rf"^\s*{_RELATED_LABEL}\s*[:：]?\s*$", re.IGNORECASE)  # the list's label
_RELATED_LEAD = re.compile(rf"^\s*{_RELATED_LABEL}\s*[:：]", re.IGNORECASE)  # "Read more: <a link>"
_RELATED_TOKEN = re.compile(r"related|recommend|more-?(?:stories|news|articles)|read-?more|also-?read|popular"
                            r"|trending|most-?read|outbrain|taboola|xgxw|xgwz|tuijian", re.IGNORECASE)
_NAV_TOKEN = re.compile(r"(?:^|[-_])(?:nav|navbar|navigation|menu|breadcrumbs?|pagination|pager|topbar)(?:$|[-_])"
                        r"|^(?:header|footer|masthead)$|breadcrumb|sitemap", re.IGNORECASE)
_COOKIE = re.compile(r"\bcookies?\b.{0,80}\b(?:use|accept|consent|policy)\b|\bwe use cookies\b", re.IGNORECASE)
_COPYRIGHT = re.compile(r"^\s*(?:copyright\s*)?(?:©|\(c\))|all rights reserved|版权所有"
                        r"|^\s*copyright\s+(?:©\s*)?\d{4}(?:\s*[-–]\s*\d{4})?\s+(?:by\s+)?[A-Z]", re.IGNORECASE)


def _tokens(tag_path: str, levels: int | None = None) -> list[str]:
    """The id and class tokens of a tag path's segments (the last `levels` of them, or all)."""
    segments = tag_path.split("/")
    return [t for seg in (segments[-levels:] if levels else segments) for t in rules._tokens(seg)]


def _tags(tag_path: str) -> list[str]:
    return [rules._tag(seg) for seg in tag_path.split("/")]


def is_gallery_control(block: Block) -> bool:
    """A bare gallery counter ("1 of 4", "3/12"): the gallery's control, not its caption."""
    return block.text_len <= 8 and rules.gallery_counter(block.text)


def is_prompt(block: Block) -> bool:
    """A newsletter, subscription or app prompt (a short line)."""
    return 0 < block.text_len <= PROMPT_CHARS and bool(_PROMPT.search(block.text.strip()[:PROMPT_START]))


def is_share(block: Block) -> bool:
    """A share/like/follow/tag line, by its text or, short and mostly links, by its path."""
    if not 0 < block.text_len <= SHARE_CHARS:
        return False
    if _SHARE.match(block.text):
        return True
    return block.link_density >= RELATED_LINKS and any(_SHARE_TOKEN.search(t) for t in _tokens(block.tag_path, 3))


def is_related(block: Block) -> bool:
    """A related/recommended list's label or item."""
    if block.text_len <= 40 and _RELATED_ALONE.match(block.text):
        return True
    if block.text_len <= 200 and block.link_density >= 0.3 and _RELATED_LEAD.match(block.text):
        return True
    return block.link_density >= RELATED_LINKS and any(_RELATED_TOKEN.search(t) for t in _tokens(block.tag_path))


def is_navigation(block: Block) -> bool:
    """A menu, breadcrumb or pagination item: mostly links, under <nav> or an element named for one."""
    if block.link_density < RELATED_LINKS:
        return False
    return "nav" in _tags(block.tag_path) or any(_NAV_TOKEN.search(t) for t in _tokens(block.tag_path))


def _is_other(block: Block) -> bool:
    """A cookie notice or a copyright line."""
    return block.text_len <= 300 and bool(_COOKIE.search(block.text) or _COPYRIGHT.search(block.text))


def _detected(block: Block, listed: bool = False) -> str | None:
    """The role the block's own cues name (module docstring, 4 and 7-9), or None; `listed`: the block is an item
    of a listing page's list (no related or navigation role)."""
    if is_caption(block):
        return "caption"
    if is_gallery_control(block):
        return "navigation"
    if rules.is_promo(block) or is_prompt(block):
        return "promo"
    if is_share(block):
        return "share"
    if listed:
        return "other" if _is_other(block) else None
    if is_related(block):
        return "related"
    if is_navigation(block):
        return "navigation"
    if _is_other(block):
        return "other"
    return None


def block_roles(blocks: Sequence[Block], gold: Sequence[int], title: str = "", descriptions: Sequence[str] = (),
                l3s: Sequence[int] | None = None, listing: bool = False, thread_cue: bool = False) -> list[str]:
    """Each block's role (module docstring). gold: the gold alignment's labels (1 body); l3s: each block's L3S
    class (labels.annotated_classes), where the page has them; listing: a listing or collection page, whose list
    in the gold is its body (no related or navigation role there); thread_cue: the page's structured data names a
    thread (extraction.kinds.thread_cue)."""
    n = len(blocks)
    roles_: list[str | None] = [None] * n
    keep = np.array([bool(y) for y in gold], dtype=bool) if n else np.zeros(0, bool)
    chars = np.array([b.text_len for b in blocks], dtype=np.int64)
    comments = np.array([rules.in_comments(b) for b in blocks], dtype=bool)
    inside, outside = int(chars[keep & comments].sum()), int(chars[keep & ~comments].sum())
    thread = inside > 0 and (outside < MIN_ARTICLE or (thread_cue and inside >= kinds.POST_SHARE * outside))
    for i in range(n):
        cls = l3s[i] if l3s is not None else None
        if cls in L3S_ROLES:
            roles_[i] = L3S_ROLES[cls]
        elif comments[i] and not thread:
            roles_[i] = "comment"
    free = keep & np.array([r is None for r in roles_], dtype=bool)
    head = headline_block(blocks, title, free) if n else None
    if head is not None and roles_[head] is None and (l3s is None or l3s[head] != L3S_BODY):
        roles_[head] = "headline"
    for i, block in enumerate(blocks):
        if roles_[i] is None and is_caption(block):
            roles_[i] = "caption"
    free = keep & np.array([r is None for r in roles_], dtype=bool)
    for i in rules.byline_blocks(blocks, free, head):
        roles_[i] = "byline"
    for i, block in enumerate(blocks):
        if roles_[i] is None and rules.is_byline(block) and any(
                t in ("byline", "author", "dateline") for t in map(str.lower, _tokens(block.tag_path, 1))):
            roles_[i] = "byline"
    free = keep & np.array([r is None for r in roles_], dtype=bool)
    stand = rules.standfirst_block(blocks, free, head, descriptions, comments) if n else None
    if stand is not None:
        roles_[stand] = "standfirst"
    free = np.array([r is None for r in roles_], dtype=bool)
    base = keep & free  # the gold's body less what has a role already, as the decision rule's steps go
    points = free & rules.key_points(blocks)
    if is_minor(points & keep, base, chars, KEY_POINTS_SHARE):  # else the page's content is them
        roles_ = [("key_points" if p else r) for r, p in zip(roles_, points.tolist(), strict=True)]
        base, free = base & ~points, free & ~points
    side = free & np.array([rules.in_sidebar(b) for b in blocks], dtype=bool)
    if is_minor(side & keep, base, chars, SIDEBAR_SHARE):
        roles_ = [("sidebar" if x else r) for r, x in zip(roles_, side.tolist(), strict=True)]
    out: list[str] = []
    for i, block in enumerate(blocks):
        role = roles_[i] or _detected(block, listing and bool(gold[i]))
        if role is None and l3s is not None and l3s[i] == L3S_SUPPLEMENTAL:
            role = "byline" if rules.is_byline(block) else "other"
        if role is None:
            role = "body" if gold[i] else "other"
        out.append(role)
    return out


def convention_targets(roles_: Sequence[str], gold: Sequence[int]) -> list[int]:
    """The body target under the convention: the gold's label where the block's role is body, else 0."""
    return [int(bool(y) and r == "body") for r, y in zip(roles_, gold, strict=True)]


def page_roles(page: Page, doc: Document, root: Any, gold: Sequence[int]) -> list[str]:
    """block_roles of a segmented dataset page: its L3S classes when it has an annotated copy, the meta
    descriptions and thread cue of its parsed tree (segment.segment_tree's root; None: none)."""
    l3s = annotated_classes(doc.blocks, page.labels_html) if page.labels_html else None
    listing = page.meta.get("page_type") in LISTING_TYPES
    cue = root is not None and kinds.thread_cue(root)
    return block_roles(doc.blocks, gold, doc.title, rules.page_descriptions(root), l3s, listing, cue)
