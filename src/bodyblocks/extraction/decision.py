"""The decision rule every block extractor shares: which blocks of a page are body, and how sure we are.

    rule = DecisionRule.from_meta(checkpoint_meta)          # the tuned values, or those given by hand
    extraction = rule.decide(doc, probs, name="ensemble")

  1. threshold: a block is body when P(body) >= threshold (tuned on validation: training/tune.py);
  2. rescue: on a page where no block reaches the threshold, the blocks at or above `rescue` are kept
     (None, or rescue >= threshold: no rescue);
  3. container (when tuned): body text sits in one element of the page, so the main container is found from
     what steps 1-2 keep (the deepest element holding `share` of the kept characters) and the choice is
     redone around it: inside it blocks at or above `inside` are kept, outside it only those at or above
     `outside`. This fills the holes a block-by-block decision leaves in the article and drops strays far
     from it (a related-links box, a caption in the sidebar). With a core (`core`, `core_share`) the
     container is found from the confident blocks alone (P(body) >= core) when they hold at least
     `core_share` of the kept characters: a sidebar of doubtful prose kept beside the article then no longer
     pulls the container up to the page's wrapper. The leave-one-source-out blend grid
     (docs/GENERALIZATION.md) chooses the outer threshold and the core;
  4. title kept (when the rule has it: a convention learnt from a user's labels, training/finetune.py): the
     block that best matches the page's title (headline.title_match) is kept, so that a headline just under the
     threshold is not lost where the convention counts it as body;
  5. comments (roles.py): the blocks in comment containers (on an article, also the sections under a comments
     heading: roles.comment_sections) are not body and their comment text goes to Extraction.comments
     (roles.is_comment_text: no headings, names or link lines); a rule that keeps comments (`--comments`) keeps
     that comment text as body instead, whatever the model said of it. On a thread (kinds.py: less than
     MIN_ARTICLE kept characters outside them, or structured data naming a forum posting or a Q&A page, or posts
     repeated in no comment container: kinds.repeated_posts, whose comment containers then stay out) the posts
     are the body, in order: kept, also those the model doubted;
  6. headline (headline.headline_block): the block that matches the title channel (og:title, <title>), else a
     kept <h1> opening the kept text, else (no title channel) a short bold/large/title-class block at the body's
     top (prominence.py), is the page's title and not body (Extraction.headline names it); the kept blocks
     above it go with it when they hold at most BEFORE_HEADLINE of the kept characters. A page without one
     gets the title channel less its site's name (headline.site_free_title). A kept block with the title's very
     text (a headline shown twice) is dropped too (roles.headline_copies);
  7. roles (roles.py): bylines/datelines next to the headline go to Extraction.byline, the standfirst (the
     summary paragraph under the headline: roles.standfirst_block) to Extraction.standfirst; short promo lines,
     a story's key points box (roles.key_points: "STORY HIGHLIGHTS" and its list; unless it holds more than
     KEY_POINTS_SHARE of the kept characters) and the widgets of a sidebar (roles.in_sidebar: #sidebar, .widget;
     unless they hold more than SIDEBAR_SHARE of the kept characters) are dropped; kept captions and photo
     credits (roles.is_caption) go to Extraction.captions, unless they hold more than CAPTION_SHARE of the kept
     characters (a gallery, a list of cards: its content), with the captions the model did not keep between the
     headline (or the first kept block) and the last kept block, under their common element; a short link-only
     last block (a button: "Follow", "关注") is dropped;
  8. error page: an error or "not found" page (kinds.error_page: its title or its own text names the error,
     and its short kept text is that message and little else) comes back empty, flagged error_page (and
     no_body), its message in Extraction.error_text;
  9. low confidence: a page whose best block stays under `confident`, whose kept text after step 4 (comments
     counted) is more than PAGE_SHARE comments, or whose kept text is more than PAGE_SHARE link text (a
     listing, a link list), is flagged low_confidence, the reasons in Extraction.low_confidence_reason;
 10. no body: a page where nothing is kept comes back empty with no_body=True, never as navigation;
 11. the rescue after the roles (with a rescue under the threshold): where every block steps 1-4 kept is
     taken out by steps 5-7 (comments, the headline, a byline, a caption, a promo line), no body block reached
     the threshold, so steps 1-10 run again with those blocks, and every block at the threshold, set aside
     (P(body) 0): the rescue of step 2 then applies to the rest. A listing whose title was its one confident
     block, or an article whose one paragraph sat just under the threshold beside its headline and source line,
     no longer comes back empty; the result keeps the first pass's headline, byline, standfirst and captions,
     and is flagged low_confidence. A page the second pass finds to be an error page is one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bodyblocks.extraction import kinds, roles
from bodyblocks.extraction.headline import headline_block, page_title, title_match
from bodyblocks.extraction.prominence import PROMINENT
from bodyblocks.types import Block, Document, Extraction

DEFAULT_THRESHOLD = 0.5  # of a checkpoint that records none
MIN_ARTICLE = kinds.MIN_ARTICLE  # step 5: kept characters outside comment containers that make an article
# step 5: a block under a comments heading that the rule did not keep is reported as a comment when its P(body) is
# at least this (a footer that shares the comments' parent element is none)
SECTION_HEARD = 0.15
# step 6: of the kept characters, at most this share above the headline is left out with it (more: a page of
# several posts, or a headline found far down the page, keeps them)
BEFORE_HEADLINE = 0.1
CAPTION_SHARE = 0.3  # step 7: captions holding more of the kept characters than this are the page's content
KEY_POINTS_SHARE = 0.5  # step 7: a key points box holding more of the kept characters than this is the page's
SIDEBAR_SHARE = 0.5  # step 7: a sidebar's kept widgets holding more of the kept characters than this are the page's
PAGE_SHARE = 0.5  # step 9: a page whose kept characters are more than this share comments, or link text, is unsure
RESCUED = "rescued under the threshold (what reached it was the headline, byline, captions or comments)"  # step 11


def _parent(xpath: str) -> str:
    """The xpath of an element's parent ("" for the root, /html[1], and above)."""
    cut = xpath.rfind("/")
    return xpath[:cut] if cut > 0 else ""


def _captions_around(blocks: Sequence[Block], keep: np.ndarray, head: int | None) -> list[int]:
    """Captions the model did not keep that sit with the article: between the headline (else the first kept
    block) and the last kept block, under the element that holds them (step 7: Extraction.captions too)."""
    kept = np.flatnonzero(keep)
    if not len(kept):
        return []
    start = head if head is not None and head < kept[0] else int(kept[0])
    parents = [_parent(blocks[i].tag_path) for i in (start, int(kept[0]), int(kept[-1]))]
    common = min(roles.common_depth(parents[0], p) for p in parents[1:])
    under = "/".join(parents[0].split("/")[:common]) + "/"
    return [i for i in range(start + 1, int(kept[-1]))
            if not keep[i] and blocks[i].tag_path.startswith(under) and roles.is_caption(blocks[i])]


def element_sums(xpaths: Sequence[str], values: np.ndarray) -> tuple[dict[str, int], np.ndarray]:
    """What each element holds: per element (xpath) that is a proper ancestor of one of the blocks, the sums of
    the blocks' `values` (n, k) over the blocks strictly inside it.

    Returns ({xpath: row}, sums (elements, k)); rows are in the order of each element's first block (an
    element before its ancestors). Every element is summed into its parent once, deepest first, rather than
    every block into every ancestor.
    """
    rows: dict[str, int] = {}
    parents: list[int] = []  # row -> its parent's row (-1: none among the rows)
    owner = np.full(len(xpaths), -1, dtype=np.intp)  # block -> its parent element's row
    for i, xpath in enumerate(xpaths):
        parent = _parent(xpath)
        if not parent:
            continue
        row = rows.get(parent)
        if row is None:
            row = rows[parent] = len(parents)
            parents.append(-1)
            child, up = row, _parent(parent)
            while up:  # the element's ancestors not seen yet, each once
                known = rows.get(up)
                if known is not None:
                    parents[child] = known
                    break
                parents[child] = rows[up] = len(parents)
                parents.append(-1)
                child, up = parents[child], _parent(up)
        owner[i] = row
    inside = owner >= 0
    depth = [x.count("/") for x in rows]
    order = sorted(range(len(parents)), key=lambda r: -depth[r])  # deepest first; stable: first seen first
    columns = []
    for k in range(values.shape[1]):  # per column in Python floats: a few hundred adds, no array per element
        col = np.bincount(owner[inside], weights=values[inside, k], minlength=len(parents)).tolist()
        for row in order:
            if parents[row] >= 0:
                col[parents[row]] += col[row]
        columns.append(col)
    sums = np.array(columns, dtype=np.float64).T.reshape(len(parents), values.shape[1])
    return rows, sums


def keep_mask(probs: np.ndarray, threshold: float, rescue: float | None = None) -> np.ndarray:
    """Blocks kept by steps 1-2: P(body) >= threshold, or, on a page where none is, >= rescue."""
    keep = probs >= threshold
    if not keep.any() and rescue is not None and rescue < threshold:
        keep = probs >= rescue
    return keep


def main_container(blocks: Sequence[Block], keep: np.ndarray, share: float) -> str | None:
    """The xpath of the deepest element holding at least `share` of the kept blocks' characters (None: nothing
    with characters is kept); of two as deep, the one whose kept characters start first."""
    kept = [blocks[i] for i in np.flatnonzero(keep) if blocks[i].text_len]
    if not kept:
        return None
    chars = np.array([[b.text_len] for b in kept], dtype=np.float64)
    rows, held = element_sums([b.xpath for b in kept], chars)
    enough = [x for x, row in rows.items() if held[row, 0] >= share * chars.sum()]
    return max(enough, key=lambda x: x.count("/")) if enough else None


def inside_mask(blocks: Sequence[Block], container: str) -> np.ndarray:
    """Blocks inside the element with this xpath."""
    prefix = container + "/"
    return np.fromiter((b.xpath.startswith(prefix) for b in blocks), bool, len(blocks))


def keep_around(keep: np.ndarray, probs: np.ndarray, inside: np.ndarray, low: float, high: float) -> np.ndarray:
    """`keep` redone around a container (`inside`: its blocks): inside it what steps 1-2 kept and every block
    at or above `low`, outside it only the blocks at or above `high`."""
    return (inside & (keep | (probs >= low))) | (~inside & (probs >= high))


def core_mask(blocks: Sequence[Block], probs: np.ndarray, keep: np.ndarray, core: float, core_share: float
              ) -> np.ndarray:
    """Step 3's core: the blocks at or above `core` when they hold at least `core_share` of the kept blocks'
    characters (and some), else `keep`."""
    confident = probs >= core
    chars = np.fromiter((b.text_len for b in blocks), np.float64, len(blocks))
    held = float(chars @ confident)
    return confident if held > 0 and held >= core_share * float(chars @ keep) else keep


def container_keep(blocks: Sequence[Block], probs: np.ndarray, keep: np.ndarray,
                   container: tuple[float, ...]) -> np.ndarray:
    """Step 3: `keep` redone around the main container; container = (share, inside, outside) or (share, inside,
    outside, core, core_share): the container found from the core (core_mask)."""
    share, inside, outside = container[:3]
    found = keep if len(container) == 3 else core_mask(blocks, probs, keep, container[3], container[4])
    main = main_container(blocks, found, share)
    if main is None:
        return keep
    return keep_around(keep, probs, inside_mask(blocks, main), inside, outside)


def is_minor(mask: np.ndarray, keep: np.ndarray, chars: np.ndarray, share: float) -> bool:
    """Whether the blocks of `mask` (of one role) hold at most `share` of the characters of `keep` (else they are the
    page's content: a page of widgets, a briefing that is its key points); training/targets.py's guard too."""
    return bool(chars[mask].sum() <= share * chars[keep].sum())


def _minor(mask: np.ndarray, keep: np.ndarray, chars: np.ndarray, share: float) -> np.ndarray:
    """`mask` (kept blocks of one role), or nothing where they are the page's content (is_minor)."""
    return mask if is_minor(mask, keep, chars, share) else np.zeros_like(mask)


@dataclass(frozen=True)
class DecisionRule:
    """Threshold, low-confidence level and rescue threshold of a block extractor (module docstring)."""

    threshold: float
    confident: float
    rescue: float | None = None
    container: tuple[float, ...] | None = None  # step 3: (share, inside, outside[, core, core_share]); None: no step 3
    headline: bool = False  # step 4: keep the block that matches the page's title
    comments: bool = False  # step 5: keep the comment text (roles.is_comment_text) as body, not Extraction.comments

    def __post_init__(self) -> None:
        values = [self.threshold, self.confident] + ([] if self.rescue is None else [self.rescue])
        if self.container is not None:
            if len(self.container) not in (3, 5):
                raise ValueError(f"decision rule: container is (share, inside, outside[, core, core_share]), got "
                                 f"{self.container!r}")
            values += list(self.container)
        if not all(isinstance(v, int | float) and 0.0 <= v <= 1.0 for v in values):  # NaN fails both
            raise ValueError(f"decision rule: threshold, confident, rescue and the container's values must be "
                             f"numbers in [0, 1], got {self.threshold!r}, {self.confident!r}, {self.rescue!r}, "
                             f"{self.container!r}")

    @classmethod
    def resolve(cls, tuned_threshold: float, tuned_confident: float | None, tuned_rescue: float | None,
                threshold: float | None = None, confident: float | None = None,
                rescue: float | None = None, tuned_container: Sequence[float] | None = None,
                headline: bool = False, comments: bool = False) -> DecisionRule:
        """The values given, else the tuned ones.

        `confident` defaults to the threshold in use when nothing was tuned for it. The tuned rescue and
        container step belong to the tuned threshold: a threshold given by hand turns them off (the rescue
        stays when one is given too).
        """
        t = float(threshold if threshold is not None else tuned_threshold)
        c = float(confident if confident is not None else (tuned_confident if tuned_confident is not None else t))
        tuned = tuned_rescue if threshold is None else None
        box = tuple(float(v) for v in tuned_container) if tuned_container is not None and threshold is None else None
        return cls(t, c, rescue if rescue is not None else (float(tuned) if tuned is not None else None),
                   box, bool(headline), bool(comments))  # type: ignore[arg-type]

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], threshold: float | None = None, confident: float | None = None,
                  rescue: float | None = None, comments: bool = False) -> DecisionRule:
        """`resolve` from a checkpoint's config.json (its keys threshold, confident, rescue, container, headline);
        `comments`: keep the comments (step 5)."""
        headline = meta.get("headline", False)
        if not isinstance(headline, bool):
            raise ValueError(f"decision rule: headline must be true or false, got {headline!r}")
        return cls.resolve(meta.get("threshold", DEFAULT_THRESHOLD), meta.get("confident"), meta.get("rescue"),
                           threshold, confident, rescue, meta.get("container"), headline, comments)

    def keep(self, probs: np.ndarray, blocks: Sequence[Block] | None = None, title: str = "") -> np.ndarray:
        """Steps 1-4 (3 and 4 when the rule has them and the blocks, and for 4 the title, are given): the kept
        blocks as a mask."""
        keep = keep_mask(probs, self.threshold, self.rescue)  # steps 1-2
        if self.container is not None and blocks is not None and keep.any():  # step 3
            keep = container_keep(blocks, probs, keep, self.container)
        if self.headline and blocks is not None and title and keep.any():  # step 4
            head = title_match(blocks, title, keep)
            if head is not None:
                keep = keep.copy()
                keep[head] = True
        return keep

    def decide(self, doc: Document, probs: np.ndarray, name: str) -> Extraction:
        """Steps 1-11 on one page: its Extraction by the extractor called `name` (step 11: the rescue after the
        roles, where nothing of what steps 1-4 kept stayed body)."""
        extraction = self._decide(doc, probs, name)  # steps 1-10
        # step 11: the rescue after the roles
        if (extraction.kept or extraction.error_page or self.rescue is None
                or self.rescue >= self.threshold or not (probs >= self.threshold).any()):
            return extraction
        rest = probs.copy()  # what steps 1-4 kept, and every block at the threshold, set aside: step 2's rescue
        rest[self.keep(probs, doc.blocks, doc.title) | (probs >= self.threshold)] = 0.0
        again = self._decide(doc, rest, name)
        if again.error_page:  # its short text says so, now that the headline is set aside
            return replace(again, probabilities=extraction.probabilities, confidence=extraction.confidence)
        if not again.kept:
            return extraction
        captions = sorted({*extraction.caption_blocks, *again.caption_blocks})
        fields = dict(byline=extraction.byline or again.byline, standfirst=extraction.standfirst or again.standfirst,
                      caption_blocks=captions, captions=[doc.blocks[i].text for i in captions],
                      comments=again.comments or extraction.comments)
        if extraction.headline is not None:  # the headline the first pass found (set aside, it is none now)
            fields.update(title=extraction.title, headline=extraction.headline)
        return replace(again, probabilities=extraction.probabilities, low_confidence=True,
                       low_confidence_reason=RESCUED, confidence=float(np.mean(probs[again.kept])), **fields)

    def unsure(self, top: float, comment_share: float, link_share: float) -> str:
        """Why a page is low_confidence (step 9), one line; "" when it is not."""
        best = f"no block is confidently body (the best P(body) {top:.3f} < {self.confident:.3f})"
        why = (best if top < self.confident else "", f"comments are {comment_share:.0%} of the kept text" if
               comment_share > PAGE_SHARE else "", f"link text is {link_share:.0%} of the kept text" if
               link_share > PAGE_SHARE else "")
        return "; ".join(w for w in why if w)

    def _decide(self, doc: Document, probs: np.ndarray, name: str) -> Extraction:
        """Steps 1-10 on one page, without step 11."""
        blocks = doc.blocks
        keep = self.keep(probs, blocks, doc.title).copy()  # steps 1-4
        # step 5: comments and threads (the comments' share of what steps 1-4 kept is step 9's)
        chars = np.fromiter((b.text_len for b in blocks), np.int64, len(blocks))
        comments = np.fromiter((roles.in_comments(b) for b in blocks), bool, len(blocks))
        chosen = int(chars[keep].sum())
        in_posts = int(chars[keep & comments].sum())
        comment_share = in_posts / chosen if chosen else 0.0
        posts = self._thread_posts(doc, probs, keep, comments, chosen - in_posts, in_posts)
        said: list[int] = []
        if posts is not None:
            keep |= posts  # a thread: its posts, in order
        # an article with comments, or a thread whose posts lie outside comment containers (kinds.repeated_posts):
        # the body alone, the comments a field of their own
        if posts is None or (posts.any() and not (posts & comments).any()):
            heard = comments.copy()  # the comments reported: all in containers; under a heading, those not dismissed
            if posts is None:  # an article: the sections under a comments heading too
                sections = self._comment_sections(blocks, keep) & ~comments
                comments = comments | sections
                heard |= sections & (keep | (probs >= SECTION_HEARD))
            said = [int(i) for i in np.flatnonzero(heard) if roles.is_comment_text(blocks[i])]
            if self.comments:  # kept in the text, after the article, rather than a field (the model doubts them)
                keep[said] = True
                said = []
            else:
                keep &= ~comments
        # step 6: the headline is the title, not body
        head = headline_block(blocks, doc.title, keep, doc.extra.get(PROMINENT, ())) if blocks else None
        if head is not None:
            keep[head] = False
            if chars[: head][keep[: head]].sum() <= BEFORE_HEADLINE * chars[keep].sum():
                keep[: head] = False  # the body starts after it: a kicker, a breadcrumb or a dateline above it
        title = page_title(blocks, head, doc.title)
        keep[roles.headline_copies(blocks, keep, title)] = False  # the headline shown twice: once, as the title
        # step 7: the roles: byline, standfirst, promo lines, key points, sidebar, captions, a last button
        byline = roles.byline_blocks(blocks, keep, head)
        keep[byline] = False
        standfirst = roles.standfirst_block(blocks, keep, head, doc.extra.get(roles.DESCRIPTIONS, ()), comments)
        if standfirst is not None:
            keep[standfirst] = False
        keep &= ~np.fromiter((k and roles.is_promo(b) for b, k in zip(blocks, keep, strict=True)), bool, len(blocks))
        keep &= ~self._key_points(blocks, keep, chars)
        keep &= ~self._sidebar(blocks, keep, chars)
        captions = self._captions(blocks, keep, chars, head)
        kept = [int(i) for i in np.flatnonzero(keep)]
        while kept and blocks[kept[-1]].in_link_only and blocks[kept[-1]].text_len <= roles.BUTTON_CHARS:
            keep[kept.pop()] = False  # a button after the article ("Follow", "Share", "关注")
        # step 8: an error or "not found" page: no body, rather than its error text (a field of its own)
        shown = blocks[head].text if head is not None else ""
        error = bool(blocks) and kinds.error_page(blocks, keep, doc.title, shown)
        message = "\n".join(blocks[i].text for i in kept) if error else ""
        if error:
            keep[:], kept, byline, standfirst, captions, said = False, [], [], None, [], []
        # step 9: low confidence
        top = float(probs.max()) if len(probs) else 0.0
        links = sum(blocks[i].link_len for i in kept) / max(1, int(chars[keep].sum()))
        unsure = self.unsure(top, comment_share, links)
        # step 10: nothing kept is no body (no_body), never the navigation
        return Extraction(
            text="\n".join(blocks[i].text for i in kept), title=title, extractor=name,
            encoding=doc.encoding, blocks=blocks, probabilities=[float(x) for x in probs], kept=kept,
            confidence=float(np.mean(probs[kept])) if kept else top,
            low_confidence=bool(unsure), low_confidence_reason=unsure,
            no_body=not kept, replaced=doc.replaced, truncated=doc.truncated, guessed=doc.guessed, headline=head,
            hidden_source=doc.hidden_source,
            byline="\n".join(blocks[i].text for i in byline),
            standfirst=blocks[standfirst].text if standfirst is not None else "", error_page=error,
            error_text=message, captions=[blocks[i].text for i in captions], caption_blocks=captions,
            comments=[blocks[i].text for i in said])

    # parts of steps 5 and 7, each a method that a benchmark's subclass overrides (benchmarks/rule_steps.py)
    def _thread_posts(self, doc: Document, probs: np.ndarray, keep: np.ndarray, comments: np.ndarray,
                      outside: int, inside: int) -> np.ndarray | None:
        """A thread's posts to keep (kinds.thread_posts), None on an article."""
        return kinds.thread_posts(doc, probs, keep, comments, outside, inside)

    def _comment_sections(self, blocks: Sequence[Block], keep: np.ndarray) -> np.ndarray:
        """An article's sections under a comments heading (roles.comment_sections), a mask."""
        return roles.comment_sections(blocks, keep)

    def _key_points(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray) -> np.ndarray:
        """The kept blocks of a story's key points box ("STORY HIGHLIGHTS" and its list), a mask."""
        return _minor(roles.key_points(blocks) & keep, keep, chars, KEY_POINTS_SHARE)

    def _sidebar(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray) -> np.ndarray:
        """The kept blocks of a sidebar's widgets (a blogroll, an "about us" box, sponsors), a mask."""
        side = np.fromiter((k and roles.in_sidebar(b) for b, k in zip(blocks, keep, strict=True)), bool, len(blocks))
        return _minor(side, keep, chars, SIDEBAR_SHARE)

    def _captions(self, blocks: Sequence[Block], keep: np.ndarray, chars: np.ndarray, head: int | None) -> list[int]:
        """The captions and photo credits (kept, unless the page's content, and around the kept text), out of keep."""
        captions = [int(i) for i in np.flatnonzero(keep) if roles.is_caption(blocks[i])]
        if chars[captions].sum() > CAPTION_SHARE * chars[keep].sum():
            captions = []  # a gallery or a list of cards: what reads as captions is the page's content
        keep[captions] = False  # in place: the caller's mask
        return sorted({*captions, *_captions_around(blocks, keep, head)})
