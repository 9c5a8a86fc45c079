"""The block builder that the depth-first walk (walk.py) drives: the same calls from either parser's walk (start
and end of a block-level or flag-setting element, inline_start and inline_end of any other, text, br), in the
same order, become Blocks with their tag path, xpath, DOM features and (when asked) marks.
"""

from __future__ import annotations

import re
from typing import Any

from bodyblocks.errors import TooLarge
from bodyblocks.page.htmltags import BLOCK_TAGS, HEADING_LEVELS, PRE_TAGS
from bodyblocks.page.shortcodes import drop_shortcodes
from bodyblocks.types import Block

MAX_PATH_SEGMENTS = 24  # tag paths keep the innermost segments only (deep pages would be quadratic)

_COUNTED = frozenset([*HEADING_LEVELS, "li", "dd", "dt", "td", "th", "tr"])
PUNCT = frozenset("，。！？；：、“”‘’（）《》〈〉【】…—．,.!?;:\"'()[]-")
_PUNCT_RE = re.compile("[" + re.escape("".join(sorted(PUNCT))) + "]")  # counts PUNCT characters in C
_WS_CHARS = r" \t\r\n\f\v\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WS = re.compile(f"[{_WS_CHARS}]+")
# The runs of WS that WS.sub(" ", text) changes: all but a lone space (the space between words, which
# WS would match and replace with itself). Each run is matched from its first character, so
# _WS_RUN.sub(" ", text) == WS.sub(" ", text), without a match per word.
_WS_RUN = re.compile(f"[{_WS_CHARS[1:]}][{_WS_CHARS}]*| [{_WS_CHARS}]+")
_SPACES = re.compile(r" {2,}")
_CELL_GAP = re.compile(r" *\t *")  # the spaces around a cell separator
_ZERO_WIDTH = re.compile(r"[\u200b-\u200d\u2060\ufeff\x00]")

# Blocks a page may have: the datasets' largest page has 2,641 (wcxb-0203), and a
# page of 1.4 M blocks (5.6 MB of <p>a</p>) once took its worker past the machine's memory.
MAX_BLOCKS = 200_000
CELL_TAGS = frozenset(["td", "th"])
_NOT_INLINE = BLOCK_TAGS | CELL_TAGS | PRE_TAGS | _COUNTED | {"ol", "li", "br"}


class _Open:
    """An element on the walk's stack (its path segment and <p> count are worked out only when a block needs them)."""

    __slots__ = ("tag", "attrs", "node", "n", "boundary", "child_counts", "ol_start", "seg", "p", "paths", "mark")

    def __init__(self, tag: str, attrs: Any, node: Any, n: int, boundary: bool = True) -> None:
        self.tag, self.attrs, self.node, self.n = tag, attrs, node, n  # n: position among same-tag siblings
        self.boundary = boundary  # this element starts and ends a block
        self.child_counts: dict[str, int] | None = None
        self.ol_start = 1  # first number of an <ol>
        self.seg: str | None = None
        self.p: int | None = None
        self.paths: tuple[str, str] | None = None  # (tag path, xpath) while it owns blocks: the stack below is fixed
        self.mark: list[Any] | None = None  # a link or emphasis it opened: _Builder.open_mark


def _line(raw: str) -> str:
    """One line of a block: runs of spaces collapsed, cell separators without spaces around them, stripped
    (a row's first cell opens with a separator)."""
    line = _SPACES.sub(" ", raw) if "  " in raw else raw
    return (_CELL_GAP.sub("\t", line) if "\t" in line else line).strip()


def _join_lines(lines: list[str]) -> str:
    """A block's lines, those with no visible character left out (a single line is kept as it is)."""
    return "\n".join(ln for ln in lines if ln.strip()) if len(lines) > 1 else lines[0]


def _path_segment(tag: str, attrs: Any) -> str:
    """`div#main.article-body` — tag, id and up to three classes."""
    seg = tag
    ident = attrs.get("id")
    if ident:
        seg += "#" + "_".join(str(ident).split())[:40]
    classes = attrs.get("class")
    if classes:
        names = classes.split() if isinstance(classes, str) else list(classes)
        for c in names[:3]:
            seg += "." + c[:40]
    return seg


_ASCII_WS = " \t\n\r\f\v"  # all in WS
_FLAGS = frozenset([*PRE_TAGS, *_COUNTED])  # the tags that _Builder.start and end count
# Inline marks a block keeps for Markdown output (Block.marks): links with their address, and emphasis
MARK_TAGS = {"a": "link", "b": "strong", "strong": "strong", "i": "em", "em": "em"}


class _Builder:
    """Turns the walk's calls into blocks.

    Args:
        p_children: the number of <p> children of a walk node (asked only of a block owner's parent).
    """

    def __init__(self, p_children: Any, owners: list[Any] | None = None, marks: bool = False) -> None:
        self.p_children = p_children
        self.keep_marks = marks  # note links and emphasis (Block.marks) for Markdown: about 0.8 ms a page more
        self.owners = owners  # when a list: each block's owning element is appended to it
        self.stack: list[_Open] = []
        self.blocks: list[Block] = []
        self.parts: list[str] = []  # text pieces of the current block
        self.has_text = False  # a piece holds a non-space character (else the pieces make no block)
        self.link_chars = 0
        self.in_link = 0
        self.in_pre = 0
        self.open: dict[str, int] = dict.fromkeys(_COUNTED, 0)  # open elements that set block flags
        self.headings = 0  # open h1-h6 elements
        self.marks: list[list[Any]] = []  # the current block's marks, in the order they open: [kind, text, href]
        self.flushes = 0  # blocks ended (with text or not): a mark open across one belongs to no single block

    def finish(self) -> list[Block]:
        self._flush()
        return self.blocks

    def br(self) -> None:
        self.parts.append("\n")

    def text(self, raw: str) -> None:
        """A text node (the one place of the white-space rule). ASCII white space only (between tags: most text
        nodes) is one space, or itself inside preformatted text. Any other text has its zero-width characters
        dropped, each run of white space made one space (kept as written in preformatted text), and its
        characters counted inside a link."""
        if not raw.strip(_ASCII_WS):
            self.parts.append(raw if self.in_pre else " ")
            return
        text = raw if raw.isascii() and "\x00" not in raw else _ZERO_WIDTH.sub("", raw)
        if self.in_pre:
            self.parts.append(text)
            if self.in_link:
                self.link_chars += len(WS.sub("", text))
        else:
            text = _WS_RUN.sub(" ", text)  # WS.sub(" ", text): after which " " is its only white space
            self.parts.append(text)
            if self.in_link:
                self.link_chars += len(text) - text.count(" ")
        if not self.has_text and text.strip():
            self.has_text = True

    def start(self, tag: str, attrs: Any, node: Any, boundary: bool) -> None:
        """An element starts (`boundary`: it starts a block). The walks call it for the tags in _NOT_INLINE only,
        and inline_start, which it hands any other tag to, for the rest."""
        if tag not in _NOT_INLINE:
            self.inline_start(tag, attrs, node)
            return
        if boundary:
            self._flush()
        elif tag in CELL_TAGS:
            self.parts.append("\t")  # cells of one row read as one line, apart by a tab (as innerText shows them)
        stack = self.stack
        parent = stack[-1] if stack else None
        n = 1
        if parent is not None:
            counts = parent.child_counts
            if counts is None:
                counts = parent.child_counts = {}
            n = counts.get(tag, 0) + 1
            counts[tag] = n
        opened = _Open(tag, attrs, node, n, boundary)
        if tag == "ol":
            start = str(attrs.get("start", "1")).strip()
            opened.ol_start = int(start) if start.isdigit() else 1
        elif tag == "li" and parent is not None and parent.tag == "ol":
            self.parts.append(f"{parent.ol_start + n - 1}. ")  # the marker a browser displays
            self.has_text = True
        stack.append(opened)
        if tag not in _FLAGS:
            return
        if tag in PRE_TAGS:
            self.in_pre += 1
        elif tag in _COUNTED:
            self.open[tag] += 1
            if tag in HEADING_LEVELS:
                self.headings += 1

    def end(self) -> None:
        """Close the innermost open element (the walks call start and end in pairs; inline_end closes an inline one,
        and end hands it that)."""
        stack = self.stack
        if stack[-1].tag not in _NOT_INLINE:
            self.inline_end()
            return
        if stack[-1].boundary:
            self._flush()  # before the pop: the closing element owns the text
        closed = stack.pop()
        tag = closed.tag
        if tag not in _FLAGS:
            return
        if tag in PRE_TAGS:
            self.in_pre -= 1
        elif tag in _COUNTED:
            self.open[tag] -= 1
            if tag in HEADING_LEVELS:
                self.headings -= 1

    def inline_start(self, tag: str, attrs: Any, node: Any) -> None:
        """An inline element starts (a tag not in _NOT_INLINE): pushed on the stack, counted among its parent's
        children of its tag, and a link counted (its characters are link text) and marked (Block.marks)."""
        stack = self.stack
        n = 1
        if stack:
            parent = stack[-1]
            counts = parent.child_counts
            if counts is None:
                counts = parent.child_counts = {}
            n = counts[tag] = counts.get(tag, 0) + 1
        opened = _Open(tag, attrs, node, n, False)
        stack.append(opened)
        if tag in MARK_TAGS:
            if tag == "a":
                self.in_link += 1
            if self.keep_marks:
                self.open_mark(opened, tag, attrs)

    def inline_end(self) -> None:
        """Close the innermost open element, opened by inline_start (the walks call them in pairs)."""
        closed = self.stack.pop()
        if closed.tag == "a":
            self.in_link -= 1
        if closed.mark is not None:
            self.close_mark(closed)

    def open_mark(self, opened: _Open, tag: str, attrs: Any) -> None:
        """An <a>, <b>, <strong>, <i> or <em> starts (with marks kept): note where its text starts, outside <pre>."""
        kind = MARK_TAGS[tag]
        href = None
        if kind == "link":
            href = attrs.get("href")
            if not href:
                return
        if self.in_pre:
            return
        mark = [kind, href, self.flushes, len(self.parts), -1]  # kind, href, block, first and end piece
        opened.mark = mark
        self.marks.append(mark)

    def close_mark(self, closed: _Open) -> None:
        """Its end: where its text ends, when it lies in one block (else the mark is dropped)."""
        mark = closed.mark
        if mark is not None and mark[2] == self.flushes:
            mark[4] = len(self.parts)

    def _mark_texts(self, marks: list[list[Any]], text: str) -> tuple[tuple[str, str, str | None], ...]:
        """The block's closed marks as (kind, text, href); a mark over the whole block (a link that is a menu
        item) takes the block's `text` (already made from its pieces) without joining them again."""
        parts = self.parts
        n = len(parts)
        out = []
        for kind, href, _, first, end in marks:
            if end < 0:
                continue
            if end == n and (first == 0 or (first == 1 and not parts[0].strip())) and "\n" not in text:
                mtext = text
            else:
                mtext = _line("".join(parts[first:end]).replace("\n", " ").replace("\t", " "))
            if mtext:
                out.append((kind, mtext, href))
        return tuple(out)

    def _flush(self) -> None:
        self.flushes += 1
        marks = self.marks
        if marks:
            self.marks = []
        if not self.has_text:  # nothing visible: no block (white space and line breaks are dropped)
            self.parts.clear()
            self.link_chars = 0
            return
        raw = "".join(self.parts)
        if self.in_pre:
            text = _join_lines([ln.rstrip() for ln in raw.split("\n")])
        elif "\n" not in raw:  # one line (the usual case); has_text: something is left after the strip
            text = _line(raw)
        else:  # pieces were normalised one by one: collapse the spaces where they meet
            text = _join_lines([_line(ln) for ln in raw.split("\n")])
        if not self.in_pre and "[" in text:
            text = drop_shortcodes(text)  # a page builder's layout markup left as text (shortcodes.py)
        mark_texts = self._mark_texts(marks, text) if marks and text else ()  # before the pieces go
        self.parts.clear()
        self.has_text = False
        link_chars, self.link_chars = self.link_chars, 0
        if not text:  # shortcodes only
            return
        if len(self.blocks) >= MAX_BLOCKS:
            raise TooLarge(f"more than {MAX_BLOCKS:,} text blocks: a page this fragmented is failed alone rather "
                           "than classified in gigabytes")
        block = self._make_block(text, link_chars)
        if mark_texts:
            block.marks = mark_texts
        self.blocks.append(block)

    def _paths(self, k: int) -> tuple[str, str]:
        """(tag path, xpath) of stack[k], from those of its parent (each open element works them out once)."""
        stack = self.stack
        o = stack[k]
        if o.paths is not None:
            return o.paths
        if o.seg is None:
            o.seg = _path_segment(o.tag, o.attrs)
        if k == 0:
            paths = (o.seg, f"/{o.tag}[{o.n}]")
        elif k < MAX_PATH_SEGMENTS:
            head_path, head_x = stack[k - 1].paths or self._paths(k - 1)
            paths = (f"{head_path}/{o.seg}", f"{head_x}/{o.tag}[{o.n}]")
        else:  # only the innermost segments (a 10,000-deep page must not build quadratic strings)
            path = stack[k + 1 - MAX_PATH_SEGMENTS : k + 1]
            for p in path:
                if p.seg is None:
                    p.seg = _path_segment(p.tag, p.attrs)
            paths = (".../" + "/".join([p.seg for p in path]),  # type: ignore[misc]
                     "/.../" + "/".join([f"{p.tag}[{p.n}]" for p in path]))
        o.paths = paths
        return paths

    def _make_block(self, text: str, link_chars: int) -> Block:
        stack = self.stack
        k = len(stack) - 1  # the innermost open block-level element owns the text
        while k > 0 and not stack[k].boundary:
            k -= 1
        owner = stack[k] if stack else _Open("html", {}, None, 1)
        if self.owners is not None:
            self.owners.append(owner.node)
        paths = owner.paths or (self._paths(k) if stack else ("", "/"))
        parent = stack[k - 1] if k > 0 else None
        if parent is not None and parent.p is None:
            parent.p = self.p_children(parent.node)
        # Counters instead of a scan of the stack: a walk down a 10,000-deep page stays linear. Headings,
        # list items and rows are block-level, so every open one sits at or above the owner.
        opened = self.open
        heading_level = (max((level for h, level in HEADING_LEVELS.items() if opened[h]), default=0)
                         if self.headings else 0)
        if self.in_pre:
            text_len = len(WS.sub("", text))
        else:  # white space is already one " ", "\n" or cell-separating "\t" here
            text_len = len(text) - text.count(" ") - text.count("\n") - text.count("\t")
        link_len = min(link_chars, text_len)
        punct_count = len(_PUNCT_RE.findall(text))
        index = len(self.blocks)
        tag = owner.tag
        tag_path = paths[0] or "html"
        xpath = paths[1]
        depth = k
        link_density = link_len / text_len if text_len else 0.0
        punct_density = punct_count / text_len if text_len else 0.0
        is_list_item = bool(opened["li"] or opened["dd"] or opened["dt"])
        is_table_cell = bool(opened["td"] or opened["th"] or opened["tr"])
        sibling_paragraphs: int = parent.p if parent is not None else 0  # type: ignore[assignment]
        in_link_only = text_len > 0 and link_len >= text_len
        # Each field in a local of its name, passed by position in field order (by keyword, the call costs four
        # times as much: 3% of the segmenter's time); tests/test_walk_block.py checks the names and their order.
        return Block(index, text, tag, tag_path, xpath, depth, text_len, link_len, link_density, punct_count,
                     punct_density, heading_level, is_list_item, is_table_cell, sibling_paragraphs, in_link_only)


