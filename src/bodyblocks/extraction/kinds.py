"""Page kinds the decision rule (decision.py) reads: a forum or Q&A thread, whose posts are its body, and an
error page, which has none.

    add_kind(doc, tree)                           # at segmentation: structured data naming a thread (doc.extra[KIND])
    thread_posts(doc, probs, keep, comments, outside, inside)  # a thread's posts (a mask), None on no thread
    repeated_posts(blocks, probs, keep, comments, kept)  # a thread whose posts sit in no comment container
    error_page(blocks, keep, title, headline)     # whether the page is an error or "not found" page

Thread   the page's structured data says so (JSON-LD or microdata of type DiscussionForumPosting or QAPage: forum
         software and Q&A sites write it, articles do not), or less than MIN_ARTICLE kept characters lie outside
         comment containers (the kept text is the posts). On a thread the comment containers are not dropped, and
         their post bodies are kept in order, also those the model was unsure of (it learnt comments under an
         article as not body): the blocks of the comment containers are grouped by their tag path (id and class
         tokens with digits left out: one post's "#post-123" is another's "#post-124"), and a group is post text
         when it is written (POST_CHARS characters a block on average, at most POST_LINKS link text, at least
         POST_DISTINCT of its texts different: not a row of "Reply" buttons, not the authors' names or dates) and
         the model leans to it (a kept block, or a mean P(body) of at least POST_PROB).
         A thread whose software names no comment container (forums that write each post as an <article> or
         an <li>): the page keeps less than REPEAT_KEPT characters, and some written group of blocks that
         share the last REPEAT_KEY segments of their tag path ("article.message-body/div.bbWrapper",
         "div.content/p") sits in at least MIN_POSTS different parent elements (posts, not the paragraphs of
         one article) and holds all but MIN_ARTICLE of the kept characters, some of them at least (on a page that
         keeps next to nothing, a group of menu lines is no thread); its posts are every such group the model
         leans to (repeated_posts).
Error    the page's visible text is an error message and little else: the title (the headline block, else the title
         channel) names an error ("404", "Page not found", "Error 500", "Access denied", "页面不存在", "找不到", ...)
         or a kept block says it outside quotation marks (a soft 404: "The page you are looking for could not be
         found", "抱歉，您访问的页面不存在"); the kept text is at most ERROR_CHARS; and its sentences that are not
         the message (the error named, or what an error page says about it: "may have been moved", "try the search
         box", "return to the home page", "sorry", "返回首页") hold at most OTHER_CHARS characters (a CJK one
         counted twice). An article is never emptied on its title or one phrase: two paragraphs of its own prose are
         more than OTHER_CHARS. The extraction is then empty, flagged error_page (and no_body). A response's HTTP
         status, where it is known, is read before any of this: WARC records and URL-list captures of a status other
         than 2xx are no pages (batch/warc.py, batch/inputs.py), so what is left here are soft 404s served with 200.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from bodyblocks.page.kind_features import CUES, page_cues
from bodyblocks.types import Block, Document

KIND = "kind"  # Document.extra's key: "thread" when the page's structured data names one (add_kind)
THREAD = "thread"
MIN_ARTICLE = 200  # kept characters outside comment containers that make an article (else: a thread)
POST_CHARS = 30  # a post-text group's mean characters a block, at least
POST_LINKS = 0.5  # its link text share, at most
POST_DISTINCT = 0.6  # its share of different texts, at least
POST_PROB = 0.1  # its mean P(body), at least (or one of its blocks kept)
POST_SHARE = 0.25  # on a page named a thread by its structured data, the posts in comment containers hold at least
# this share of the kept characters outside them (else: a Q&A page whose answers sit outside them, its comments out)
REPEAT_KEY = 2  # tag path segments that name a post's text block in a repeated structure
MIN_POSTS = 3  # a repeated group's blocks sit in this many different parent elements at least
REPEAT_KEPT = 2000  # a page keeping this many characters or more is no thread of repeated posts (an article)
ERROR_CHARS = 1000  # an error page keeps at most this many characters (white space excluded)
# of an error page's kept text, at most this many characters (white space excluded) lie in sentences that are not
# about the error (a sign-off, the site's name); a short article's own prose is more
OTHER_CHARS = 120

_THREAD_TYPE = re.compile(r"DiscussionForumPosting|QAPage")
_LD_TYPE = re.compile(r'"@type"\s*:\s*(?:\[[^\]]*?)?"(?:https?://schema\.org/)?(?:DiscussionForumPosting|QAPage)"')
_DIGITS = re.compile(r"[.#][^.#/]*\d[^.#/]*")
# an error named anywhere in a title or headline
_ERROR_TITLE = re.compile(
    r"\b(?:error|fehler|erreur|errore|błąd|ошибка)\s*:?\s*(?:40[0134]|410|50[0234])\b"
    r"|\b(?:40[0134]|410|50[0234])\s*(?:error|fehler|erreur|not\s+found|forbidden|gone|server\s+error)\b"
    r"|\bhttp\s*(?:error\s*)?(?:40[0134]|410|50[0234])\b"
    r"|\bpage\s+(?:was\s+)?not\s+found|\bpage\s+(?:does\s*n[o']t|doesn't|no\s+longer)\s+exists?"
    r"|\bpage\s+(?:cannot|can't|could\s*not)\s+be\s+found|\bfile\s+not\s+found|\baccess\s+denied"
    r"|\ban\s+error\s+(?:has\s+)?occurred"
    r"|\bseite\s+nicht\s+gefunden|\bpage\s+introuvable|\bnie\s+znaleziono\s+strony|\bстраница\s+не\s+найдена"
    r"|页面不存在|页面未找到|找不到(?:页面|网页|该页|您要的|你要的)|网页不存在|頁面不存在|访问出错|页面出错|禁止访问|拒绝访问",
    re.IGNORECASE)
# a part of a title (cut at its separators) that is an error and nothing else: "404", "Not Found", "Forbidden"
_ERROR_PART = re.compile(
    r"(?:error\s*)?(?:40[0134]|410|50[0234])|not\s+found|forbidden|gone|oops!?|error|server\s+error"
    r"|internal\s+server\s+error|service\s+unavailable|bad\s+gateway|bad\s+request|unauthori[sz]ed|找不到|出错了|错误",
    re.IGNORECASE)
_TITLE_CUT = re.compile(r"\s+[|｜–—:-]\s+|\s*[|｜_]\s*|\s*[:：]\s+")
_SOFT_ERROR = re.compile(
    r"\b(?:page|article|content|post|url|document|file|topic)\s+(?:(?:that\s+)?you\s+(?:are|were|'re)\s+looking\s+for|you\s+requested"
    r"|you\s+tried\s+to\s+(?:reach|access|visit))[^.]{0,40}?\b(?:could\s*n[o']t|cannot|can't|does\s*n[o']t|doesn't"
    r"|is\s*n[o']t|isn't|no\s+longer|was\s*n[o']t|wasn't|has\s+(?:not\s+)?been|may\s+have\s+been|might\s+have\s+been)"
    r"|\bwe\s+(?:could\s*n[o']t|couldn't|can't|cannot)\s+find\s+(?:the|that|this)\s+page"
    r"|\bthis\s+page\s+(?:does\s*n[o']t|doesn't|no\s+longer)\s+exist|\b404\b.{0,40}\bnot\s+found"
    r"|页面不存在|页面未找到|找不到(?:该|您|你)?(?:要)?(?:访问|请求)?的?(?:页面|网页|内容)|(?:页面|网页|内容)已(?:被)?删除",
    re.IGNORECASE)

# what an error page says about the error besides naming it: the page is gone, moved or not allowed, and where to go
_ABOUT_ERROR = re.compile(
    r"\b(?:page|site|website|url|link|address|file|document|resource|topic|post|content|information)s?\b"
    r".{0,80}?\b(?:not\s+(?:be\s+)?(?:been\s+)?(?:found|available|valid)|no\s+longer|unavailable|does\s*n[o']t\s+exist"
    r"|doesn't\s+exist|(?:re)?moved|deleted|renamed|changed|broken|restructured|redesigned|reorgani[sz]ed)"
    r"|\b(?:could\s*n[o']t|couldn't|cannot|can't|can\s+not)\s+(?:be\s+)?find|\b(?:not|n't)\s+(?:been\s+)?found\b"
    r"|\bno\s+longer\s+(?:available|exists?|valid)|\b(?:may|might)\s+have\s+been\s+(?:re)?moved"
    r"|\byou(?:'re|\s+are|\s+were)\s+looking\s+for|\byou\s+(?:have\s+)?(?:requested|tried\s+to|followed|typed)"
    r"|\bhome\s*page|\bsite\s*map|\bsearch\s+(?:box|page|engine|our|the\s+site|this\s+site|again)|\btry\s+searching"
    r"|\ba-z\s+index|\bgo\s+(?:home|back)\b|\b(?:back|return)\s+to\s+(?:the\s+)?(?:home|previous|main)"
    r"|\bback\s+button|\btry\s+again|\bplease\s+retry|\bwent\s+wrong|\bpermission\s+to"
    r"|\bnot\s+(?:allowed|authori[sz]ed)\s+to|\bbookmarks?\b|\bfavou?rites\b|\bwebmaster|\bweb\s+manager"
    r"|\be-?mail\s+us\b|\bcontact\s+us\b|\bsorry\b|\bapologi[sz]e|\binconvenience|\bthank\s+you\s+for\s+your\s+help"
    r"|返回(?:首页|主页|上一?页)|首页|主页|页面|网页|链接|网址|已(?:被)?删除|不存在|出错|错误|抱歉|对不起|稍后再试|重试|权限",
    re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n")
_SPACE = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


# ------------------------------------------------------------------------------------------- threads
def thread_cue(root: Any) -> bool:
    """Whether the page's structured data names a thread: microdata itemtype or JSON-LD @type of
    DiscussionForumPosting or QAPage (root: segment.segment_tree's lxml root; False without one)."""
    if root is None:
        return False
    for value in root.xpath("//@itemtype"):
        if _THREAD_TYPE.search(str(value)):
            return True
    for script in root.xpath("//script[@type='application/ld+json']"):
        if _LD_TYPE.search(script.text or ""):
            return True
    return False


def add_kind(doc: Document, root: Any) -> Document:
    """doc with its markup cues (kind_features.page_cues: the page-kind classifier's) in doc.extra[CUES], and
    doc.extra[KIND] = THREAD when its structured data names a thread (as thread_cue, from those cues); returned."""
    cues = doc.extra[CUES] = page_cues(root)
    if any(_THREAD_TYPE.search(t) for t in cues.get("types", ())):
        doc.extra[KIND] = THREAD
    return doc


def _group_key(tag_path: str) -> str:
    """A tag path with its id and class tokens holding digits left out (one post's "#post-123" is the next's
    "#post-124")."""
    return _DIGITS.sub("", tag_path)


def _written(blocks: Sequence[Block], members: list[int]) -> bool:
    """Whether a group of blocks is written text: POST_CHARS characters a block on average, at most POST_LINKS link
    text, at least POST_DISTINCT of its texts different (not a row of "Reply" buttons, not names or dates)."""
    chars = sum(blocks[i].text_len for i in members)
    links = sum(blocks[i].link_len for i in members)
    texts = {blocks[i].text.strip() for i in members}
    n = len(members)
    return chars >= POST_CHARS * n and links <= POST_LINKS * chars and len(texts) >= POST_DISTINCT * n


def _leans(probs: np.ndarray, keep: np.ndarray, members: list[int]) -> bool:
    """Whether the model leans to a group: one of its blocks kept, or a mean P(body) of at least POST_PROB."""
    return bool(keep[members].any()) or float(np.mean(probs[members])) >= POST_PROB


def post_groups(blocks: Sequence[Block], probs: np.ndarray, keep: np.ndarray, region: np.ndarray) -> np.ndarray:
    """The post text among the blocks of `region` (a thread's comment containers): tag-path groups that are written
    text the model leans to (module docstring). Returns a mask over the page's blocks."""
    groups: dict[str, list[int]] = {}
    for i in np.flatnonzero(region):
        if blocks[i].text_len:
            groups.setdefault(_group_key(blocks[i].tag_path), []).append(int(i))
    posts = np.zeros(len(blocks), bool)
    for members in groups.values():
        if _written(blocks, members) and _leans(probs, keep, members):
            posts[members] = True
    return posts


@lru_cache(maxsize=1 << 14)
def _repeat_key(tag_path: str) -> str:
    """The last REPEAT_KEY segments of a tag path, less their id and class tokens holding digits (a page's blocks
    share a few hundred tag paths)."""
    return "/".join(_group_key(tag_path).split("/")[-REPEAT_KEY:])


def repeated_posts(blocks: Sequence[Block], probs: np.ndarray, keep: np.ndarray, comments: np.ndarray, kept: int
                   ) -> np.ndarray | None:
    """The posts of a thread whose software names no comment container (module docstring), as a mask; None when
    the page is no such thread. `comments`: the blocks in comment containers, left to thread_posts; `kept`: the
    kept characters (the decision rule's count, not made again here)."""
    if kept >= REPEAT_KEPT:
        return None
    groups: dict[str, list[int]] = {}
    for i, (block, comment) in enumerate(zip(blocks, comments.tolist(), strict=True)):
        if block.text_len and not comment:
            groups.setdefault(_repeat_key(block.tag_path), []).append(i)
    posts = np.zeros(len(blocks), bool)
    for members in groups.values():
        if len(members) < MIN_POSTS or len({blocks[i].xpath.rsplit("/", 1)[0] for i in members}) < MIN_POSTS:
            continue
        if _written(blocks, members) and _leans(probs, keep, members):
            posts[members] = True
    if not (posts & keep).any():  # the posts hold none of the kept text: a page that keeps next to nothing
        return None
    if sum(blocks[i].text_len for i in np.flatnonzero(keep & ~posts & ~comments)) >= MIN_ARTICLE:
        return None
    return posts


def thread_posts(doc: Document, probs: np.ndarray, keep: np.ndarray, comments: np.ndarray, outside: int,
                 inside: int) -> np.ndarray | None:
    """The posts of a thread to keep (a mask), or None when the page is no thread (its comment containers are
    then no body). `comments`: the blocks in comment containers; `outside` and `inside`: the kept characters
    outside and inside them. A thread: some of the kept text is in comment containers and less than MIN_ARTICLE
    outside them, or the page's structured data says so (add_kind) and its posts in comment containers hold more
    text than the kept text outside them (a Q&A page whose answers sit outside them keeps its comments out);
    else a thread of repeated posts outside comment containers (repeated_posts)."""
    posts = container_posts(doc, probs, keep, comments, outside, inside)
    return posts if posts is not None else repeated_posts(doc.blocks, probs, keep, comments, outside + inside)


def container_posts(doc: Document, probs: np.ndarray, keep: np.ndarray, comments: np.ndarray, outside: int,
                    inside: int) -> np.ndarray | None:
    """thread_posts' posts in comment containers alone (None: no such thread)."""
    blocks = doc.blocks
    if comments.any():
        if inside > 0 and outside < MIN_ARTICLE:
            return post_groups(blocks, probs, keep, comments)
        if doc.extra.get(KIND) == THREAD:
            posts = post_groups(blocks, probs, keep, comments)
            if sum(blocks[i].text_len for i in np.flatnonzero(posts)) >= POST_SHARE * outside:
                return posts
    return None


# ------------------------------------------------------------------------------------------- errors
def _names_error(title: str) -> bool:
    """Whether a title or headline names an error (_ERROR_TITLE), or one of its parts is one and nothing else."""
    title = title[:200]
    if _ERROR_TITLE.search(title):
        return True
    return any(_ERROR_PART.fullmatch(part.strip(" .!-–—()[]")) for part in _TITLE_CUT.split(title))


def _says_error(text: str) -> bool:
    """Whether a kept block says the page is missing (_SOFT_ERROR) in its own voice: not inside quotation marks (an
    article quoting a server's message)."""
    return any(not _quoted(text[:m.start()]) for m in _SOFT_ERROR.finditer(text))


def _quoted(before: str) -> bool:
    """Whether the text after `before` sits inside a quotation: a curly or angle quote opened and not closed since,
    or an odd number of straight double quotes."""
    opened = max(before.rfind(q) for q in "“«„「『")
    return opened > max(before.rfind(q) for q in "”»」』") or before.count('"') % 2 == 1


def _about_error(sentence: str) -> bool:
    """Whether a sentence of an error page is its message: the error named, or what error pages say about it."""
    return bool(_ABOUT_ERROR.search(sentence) or _SOFT_ERROR.search(sentence)) or _names_error(sentence)


def other_chars(texts: Sequence[str]) -> int:
    """The characters (white space excluded) of the sentences of `texts` that are not about an error (_about_error),
    a CJK character counted twice (it carries about what two Latin letters do)."""
    total = 0
    for t in texts:
        for sentence in _SENTENCES.split(t):
            if sentence.strip() and not _about_error(sentence):
                flat = _SPACE.sub("", sentence)
                total += len(flat) + len(_CJK.findall(flat))
    return total


def error_page(blocks: Sequence[Block], keep: np.ndarray, title: str, headline: str = "") -> bool:
    """Whether the page is an error or "not found" page (module docstring): `title` the title channel, `headline`
    the headline block's text ("" where none); `keep` the kept blocks."""
    kept = [int(i) for i in np.flatnonzero(keep)]
    if sum(blocks[i].text_len for i in kept) > ERROR_CHARS:
        return False
    texts = [blocks[i].text for i in kept]
    if not (any(_names_error(t) for t in (headline, title) if t) or any(_says_error(t) for t in texts)):
        return False
    return other_chars(texts) <= OTHER_CHARS
