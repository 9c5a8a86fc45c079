"""Rule data of the baselines (tag lists, class/id word lists, constants), kept apart from their logic.

The numeric constants were set from the published descriptions of the methods where they give them; the
others were chosen by hand on a few pages and are marked so. Re-run `bodyblocks evaluate` after any change.
"""

from __future__ import annotations

import functools
import re

# ---------------------------------------------------------------------------------------------- tags
# Which elements start a line, which are invisible, which are headings: bodyblocks.page.htmltags (its BASELINE_* sets).
# Step 3 of the heuristic pipeline: boilerplate elements. Invisible ones go outright; these semantic ones
# go unless they hold most of the page (ASP.NET wraps whole pages in one <form>; some sites misuse <header>).
BOILERPLATE_TAGS = frozenset("form nav aside footer header".split())
# Containers a body can live in (candidates of the heuristic pipeline and the scorer); the text of any
# other element counts as the "direct" content of the container around it.
CONTAINER_TAGS = frozenset("div article section main td th body center".split())
PARAGRAPH_TAGS = frozenset("p pre blockquote".split())

# --------------------------------------------------------------------------------------- punctuation
PUNCTUATION = "，。！？；：、“”‘’（）《》〈〉【】…—．,.!?;:\"'()"
_PUNCT_RE = re.compile("[" + re.escape(PUNCTUATION) + "]")


def count_punct(text: str) -> int:
    """Chinese and Western punctuation marks in a text."""
    return len(_PUNCT_RE.findall(text)) if text and not text.isspace() else 0  # (most tails are white space)


def count_chars(text: str) -> int:
    """Characters without white space (str.split's white space is the regex \\s of _WS: the same count)."""
    return sum(map(len, text.split())) if text and not text.isspace() else 0


# ------------------------------------------------------------------------------------ class/id hints
# Matched against the tokens of an element's class and id (split on -, _, white space and camelCase).
# A token hits a word of NEGATIVE_AFFIX when it is the word, or starts or ends with it ("sidebar",
# "breadcrumb", "topnav", "comments") unless the rest is an inflection ("authored", "shared");
# NEGATIVE_EXACT words are too short for affixes ("ad" would hit "address", "tag" "tagline").
NEGATIVE_AFFIX = (
    "nav", "menu", "header", "footer", "side", "comment", "share", "related", "recommend", "crumb",
    "pager", "author", "cookie",
)
NEGATIVE_EXACT = frozenset(
    "ad ads adv advert adverts advertisement advertising adsense adbox adslot banner tag tags tagcloud "
    "pagination".split()
) | frozenset("meta byline dateline".split())  # bylines (date, source, author line): not body in any gold
INFLECTIONS = frozenset("d ed ing ity ities".split())
POSITIVE_AFFIX = ("article", "content", "entry", "main", "post", "body", "text", "story", "detail")
POSITIVE_EXACT = frozenset("blog news".split())
# A class/id that also names the post itself is not boilerplate: WordPress writes "hentry post
# tag-python author-kgs" on the article element, and readability keeps such elements for the same reason.
STRONG_POSITIVE = frozenset("hentry entry article post story".split())

_SPLIT = re.compile(r"[\s_\-:.]+|(?<=[a-z0-9])(?=[A-Z])")


def hint_tokens(class_id: str) -> list[str]:
    """Lower-cased tokens of a class/id string."""
    return [t.lower() for t in _SPLIT.split(class_id) if t]


def _affix_hit(token: str, word: str) -> bool:
    """The token is the word, or the word plus a non-inflection prefix or suffix."""
    if token == word:
        return True
    if token.startswith(word):
        return token[len(word):] not in INFLECTIONS
    return token.endswith(word) or token.endswith(word + "s")


def _hits(tokens: list[str], affix: tuple[str, ...], exact: frozenset[str]) -> bool:
    """Whether any token matches a word by prefix/suffix or exactly."""
    return any(_token_hits(t, affix, exact) for t in tokens)


@functools.lru_cache(maxsize=1 << 16)  # the web's class names are made of far fewer tokens than names
def _token_hits(token: str, affix: tuple[str, ...], exact: frozenset[str]) -> bool:
    return token in exact or any(_affix_hit(token, w) for w in affix)


def _any_word(words: frozenset[str] | tuple[str, ...]) -> re.Pattern[str]:
    """A pattern that finds any of the words in a lower-cased class/id string: each word a token hits holds
    is in the string, so a string it does not find hits none (the words are ASCII, whose lower case does not
    depend on the letters around them)."""
    return re.compile("|".join(sorted(map(re.escape, words), key=len, reverse=True)))


_NEGATIVE_ANY = _any_word(NEGATIVE_AFFIX + tuple(NEGATIVE_EXACT))
_POSITIVE_ANY = _any_word(POSITIVE_AFFIX + tuple(POSITIVE_EXACT))


def negative_tokens(class_id: str) -> bool:
    """is_negative's answer from the string's tokens."""
    tokens = hint_tokens(class_id)
    return _hits(tokens, NEGATIVE_AFFIX, NEGATIVE_EXACT) and not STRONG_POSITIVE.intersection(tokens)


def positive_tokens(class_id: str) -> bool:
    """is_positive's answer from the string's tokens."""
    return _hits(hint_tokens(class_id), POSITIVE_AFFIX, POSITIVE_EXACT)


@functools.lru_cache(maxsize=1 << 16)  # pages repeat their class names; the answer depends on the string alone
def is_negative(class_id: str) -> bool:
    """Class/id names of navigation, sidebars, comments, ads and similar boilerplate (a string holding none
    of the words is not split into tokens)."""
    return _NEGATIVE_ANY.search(class_id.lower()) is not None and negative_tokens(class_id)


@functools.lru_cache(maxsize=1 << 16)
def is_positive(class_id: str) -> bool:
    """Class/id names of article bodies."""
    return _POSITIVE_ANY.search(class_id.lower()) is not None and positive_tokens(class_id)


# ------------------------------------------------------------------------------ heuristic (8 steps)
KEEP_PARAGRAPHS = 3  # step 4 exception: a container with >= 3 paragraphs ...
KEEP_TEXT_SHARE = 0.35  # ... and > 35 % of the page's text is never pruned
LINK_PENALTY = 1.6  # step 5: chars * (1 - 1.6 * link density)
PARAGRAPH_BONUS = 55.0  # step 5: + 55 * min(paragraphs, 12)
PARAGRAPH_CAP = 12
POSITIVE_BONUS = 150.0  # step 5: positive class/id bonus (hand-set)
PROMOTE_GAIN = 1.1  # step 6: climb to the parent while its score is >= 1.1 x the current one (hand-set)
MIN_HEADING_CHARS = 2  # step 7: headings of two characters survive
MIN_LINE_CHARS = 10  # step 7: other lines need ten

# ---------------------------------------------------------------------------------------- scorer
SCORER_PARAGRAPH = 25.0  # punctuation + 25 x paragraphs ...
SCORER_LINK = 1.5  # ... - 1.5 x link density x length
SCORER_NEGATIVE = -1000.0
SCORER_POSITIVE = 200.0
SCORER_MIN_CHARS = 100  # a candidate needs this much text: a heading cell with a positive class must not win
SCORER_MIN_SCORE = 60.0  # below this the page has no body (hand-set: about two paragraphs of prose)
