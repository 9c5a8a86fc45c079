"""Why a rendered line is missing from our blocks: where it sits in an HTML5 tree (html5lib) and in
libxml2's (the one we walk), and the share our walk would reach on other parsers' trees."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from benchmarks.dom.lines import line_score, prologue_markup, squash
from bodyblocks.page.htmltags import INVISIBLE_TAGS
from bodyblocks.page.segment import segment
from bodyblocks.page.walk import walk_blocks

MAX_CLASSIFIED = 60  # missing lines located in the trees per page
# A missing line is put down to the first of these whose innerText holds it (Chromium's own attribution).
PART_ORDER = ("noscript", "select", "button")
NOSCRIPT = "inside <noscript> (shown with JavaScript off)"
SELECT = "<select> options (innerText lists every one)"
BUTTON = "<button> label (we hide small buttons)"
PART_CAUSE = {"noscript": NOSCRIPT, "select": SELECT, "button": BUTTON}
_HIDING_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# where Chromium shows no text (innerText never holds it), in an HTML5 tree
_CHROMIUM_HIDDEN = frozenset("head script style template title textarea iframe noembed noframes".split())
_SELECT = frozenset("select option optgroup datalist".split())
DIVERGENCE = ("libxml2 lost the text", "libxml2 put it inside", "libxml2 nests it")  # parser divergences


def _text_nodes(root: Any) -> tuple[str, list[int], list[Any]]:
    """All text of an lxml tree in document order, squashed: (joined, start offsets, parent element)."""
    parts: list[str] = []
    starts: list[int] = []
    parents: list[Any] = []
    pos = 0
    for el in root.iter():
        if isinstance(el.tag, str) and el.text:
            s = squash(el.text)
            if s:
                parts.append(s)
                starts.append(pos)
                parents.append(el)
                pos += len(s)
        if el.tail and el is not root:
            s = squash(el.tail)
            parent = el.getparent()
            if s and parent is not None:
                parts.append(s)
                starts.append(pos)
                parents.append(parent)
                pos += len(s)
    return "".join(parts), starts, parents


def _ancestors(el: Any) -> list[Any]:
    out = []
    while el is not None:
        if isinstance(el.tag, str):
            out.append(el)
        el = el.getparent()
    return out


def _tag(el: Any) -> str:
    return el.tag.rsplit("}", 1)[-1].lower()


def _signature(el: Any) -> tuple[str, ...]:
    """An element told apart across the two trees: tag, id, class and style."""
    return (_tag(el), el.get("id") or "", el.get("class") or "", el.get("style") or "")


def _hidden_by_attr(el: Any) -> bool:
    return el.get("hidden") is not None or bool(_HIDING_STYLE.search(el.get("style") or ""))


class _Locator:
    """Finds a squashed line in a tree's text: the element chains (innermost first) of its occurrences."""

    def __init__(self, root: Any) -> None:
        import bisect

        self._bisect = bisect.bisect_right
        self.joined, self.starts, self.parents = _text_nodes(root)

    def find(self, key: str, limit: int = 20) -> list[list[Any]]:
        probe = key[:32]
        out = []
        i = self.joined.find(probe)
        while i >= 0 and len(out) < limit:
            node = self._bisect(self.starts, i) - 1
            out.append(_ancestors(self.parents[node]))
            i = self.joined.find(probe, i + 1)
        return out


def _shown_by_chromium(chain: list[Any]) -> bool:
    return not any(_tag(e) in _CHROMIUM_HIDDEN for e in chain)


def _shown_by_us(chain: list[Any]) -> bool:
    return not any(_tag(e) in INVISIBLE_TAGS or _hidden_by_attr(e) for e in chain)


def line_cause(key: str, html5: _Locator | None, ours: _Locator | None) -> str:
    """Why a rendered line is missing from our blocks, from where it sits in both trees."""
    if html5 is None or ours is None:
        return "unclassified (no tree)"
    h_all = html5.find(key)
    h_shown = [c for c in h_all if _shown_by_chromium(c)]
    ours_all = ours.find(key)
    if any(_shown_by_us(c) for c in ours_all):
        return "visible to our walk (line joined or split differently)"
    if not h_shown:
        return "not in the HTML5 tree's text" if not h_all else "hidden in the HTML5 tree (CSS shows it?)"
    h = h_shown[0]
    h_tags = {_tag(e) for e in h}
    if "noscript" in h_tags:
        return NOSCRIPT
    if h_tags & _SELECT:
        return SELECT
    if "button" in h_tags:
        return BUTTON
    if not ours_all:
        return "libxml2 lost the text"
    chain = ours_all[0]
    for e in reversed(chain):  # outermost first
        name = _tag(e)
        if name in INVISIBLE_TAGS and name not in h_tags:
            return f"libxml2 put it inside <{name}>"
    hidden = [e for e in chain if _hidden_by_attr(e)]
    if hidden:
        h_sigs = {_signature(e) for e in h}
        if any(_signature(e) not in h_sigs for e in hidden):
            return "libxml2 nests it in a hidden element that the HTML5 tree closes before it"
        return "hidden attribute/style that the page's CSS overrides"
    return "other"


def html5_tree(text: str) -> Any:
    """html5lib's tree of the text (lxml elements, scripting off: <noscript> holds elements), or None when
    html5lib is not installed or fails."""
    import warnings

    try:
        import html5lib

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DataLossWarning: names lxml cannot hold are coerced
            parser = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("lxml"), namespaceHTMLElements=False)
            return parser.parse(text, scripting=False).getroot()
    except Exception:  # noqa: BLE001 - optional: a missing package or a tree lxml refuses
        return None


def part_of(key: str, part_keys: dict[str, set[str]], exact_only: bool = False) -> str | None:
    """Which of PARTS (first in PART_ORDER) Chromium shows a squashed line in: one of the part's own lines,
    or a line holding one of them: at its start or end, or as a quarter of it at least (a link and its toggle
    button on one line, a paragraph ending in a "Back" button)."""
    for p in PART_ORDER:
        if key in part_keys.get(p, ()):
            return p
    if exact_only:
        return None
    for p in PART_ORDER:
        for k in part_keys.get(p, ()):
            if len(k) >= 4 and k in key and (len(k) >= len(key) // 4 or key.startswith(k) or key.endswith(k)):
                return p
    return None


def classify(text: str, doc_blocks: int, tree: Any, h_tree: Any, missing: list[str],
             parts: list[str | None]) -> dict[str, Any]:
    """Page flags and per-line causes (counts and characters) of a page's missing lines: the lines Chromium
    shows inside a <noscript>, <select> or <button> by that part (all of them), the others (up to
    MAX_CLASSIFIED) by where they sit in the HTML5 tree and in libxml2's."""
    flags = []
    if doc_blocks == 0:
        flags.append("0 blocks")
    before = prologue_markup(text)
    if before:
        flags.append(f"{before} before <html>")
    if re.search(r"<frameset\b", text, re.IGNORECASE):
        flags.append("frameset")
    html5 = _Locator(h_tree) if h_tree is not None else None
    ours = _Locator(tree) if tree is not None else None
    lines: Counter[str] = Counter()
    chars: Counter[str] = Counter()
    located = 0
    for line, part in zip(missing, parts, strict=True):
        key = squash(line)
        if part is not None:
            c = PART_CAUSE[part]
        elif located < MAX_CLASSIFIED:
            located += 1
            c = line_cause(key, html5, ours)
        else:
            c = "not located (past the first lines)"
        lines[c] += 1
        chars[c] += len(key)
    main = chars.most_common(1)[0][0] if chars else "none"
    rest = Counter({c: n for c, n in chars.items() if c != SELECT})
    main_rest = rest.most_common(1)[0][0] if rest else "none"
    return {"flags": flags, "line_causes": dict(lines), "main_cause": main, "main_cause_no_select": main_rest}


def other_parser_shares(text: str, h_tree: Any, lines: list[str]) -> dict[str, float | None]:
    """The line share our walk reaches on an HTML5 parser's tree: html5lib's walked directly, Lexbor's
    (selectolax) serialized and segmented again. None where the parser is not installed or fails."""
    out: dict[str, float | None] = {"html5lib": None, "lexbor": None}
    try:
        if h_tree is not None:
            out["html5lib"] = line_score(lines, [b.text for b in walk_blocks(h_tree, "lxml")])["line_share"]
    except Exception:  # noqa: BLE001 - optional
        pass
    try:
        from selectolax.lexbor import LexborHTMLParser

        html = LexborHTMLParser(text).html or ""
        out["lexbor"] = line_score(lines, [b.text for b in segment(html).blocks])["line_share"]
    except Exception:  # noqa: BLE001 - optional
        pass
    return out
