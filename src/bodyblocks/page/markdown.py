"""Kept blocks -> Markdown that keeps their structure, and each block's kind.

    block_kind(block)                  # "heading", "paragraph", "list-item", "table-row", "code", "quote"
    to_markdown(title, kept_blocks)    # the title once as "# ...", then the blocks in page order
    text_markdown(title, text)         # an extractor without blocks: the title, then a paragraph a line

The standfirst (Extraction.standfirst), when there is one, follows the title as one emphasised paragraph
("*…*", its white space collapsed). What each kind becomes:
  heading     "#" x level (h1..h6); a heading that repeats the title is left out (the title is written once,
              the page's one "# " heading: an h1 below it is written as "## ");
  list-item   "- item" (items of an <ol> keep the number the segmenter gave them, "3. item"), indented two
              spaces per enclosing list;
  table-row   consecutive rows of one table as a GitHub table (the first row is the header; cells are the
              row's tab-separated parts, walk.py; "|" escaped);
  code        a fenced block, lines as they are, its fence longer than any run of backticks in it;
  quote       "> " before each line;
  paragraph   the text, a line break inside it kept as a Markdown hard break.
All the page's text is written so that a CommonMark renderer shows it as it is, never as markup or live HTML:
markdown_escape puts a backslash before what could be read as markup, and only there (the module docstring
says where), and writes the front matter's values as quoted YAML strings.
Inside paragraphs, list items and quotes, the links and emphasis the segmenter noted (Block.marks) are kept:
`[text](address)` (relative addresses resolved against the page's URL when it is known; only http, https,
mailto and relative addresses are links: `javascript:` and the like, however hidden, and in-page `#` anchors are
left as plain text), `**strong**`, `*emphasis*` (one that CommonMark would not read as emphasis, as "x**.**y",
stays plain); two links that touch (a tag list) get a space between them.
The kinds come from the segmenter's block fields alone (tag, tag path, heading level, list and cell flags),
so any block extractor's kept blocks render the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from bodyblocks.page import markdown_escape as escape
from bodyblocks.types import Block

KINDS = ("heading", "paragraph", "list-item", "table-row", "code", "quote")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ITEM_NUMBER = re.compile(r"\d{1,9}\. ")  # the number the segmenter gives an ordered list item (walk.py)


def _path_tags(tag_path: str) -> list[str]:
    """Tag names of a tag path ("html/body/div.main/ul/li" -> [..., "ul", "li"])."""
    return [re.split(r"[#.]", seg, maxsplit=1)[0] for seg in tag_path.split("/")]


def block_kind(b: Block) -> str:
    """The block's kind (KINDS), from its tag, tag path and flags."""
    if b.heading_level:
        return "heading"
    tags = _path_tags(b.tag_path)
    if b.tag in ("pre", "code") or "pre" in tags:
        return "code"
    if b.is_table_cell and b.tag == "tr":
        return "table-row"
    if b.is_list_item:
        return "list-item"
    if "blockquote" in tags:
        return "quote"
    return "paragraph"


_EMPHASIS = {"strong": "**", "em": "*"}


def _spans(text: str, marks: Sequence[tuple[str, str, str | None]], base: str | None
           ) -> list[tuple[int, int, str, str | None]]:
    """Where the block's marks sit in its text: (start, end, kind, address), in order, none overlapping (a link
    wins over an emphasis it overlaps; a mark inside another is dropped)."""
    found: list[tuple[int, int, str, str | None]] = []
    cursor = 0
    for kind, mtext, href in marks:
        address = escape.destination(href, base) if kind == "link" else None
        if kind == "link" and address is None:
            continue
        pos = text.find(mtext, cursor)
        if pos < 0 or "\n" in mtext:
            continue
        found.append((pos, pos + len(mtext), kind, address))
        cursor = pos  # marks come in the order they open: the next starts here or later
    chosen: list[tuple[int, int, str, str | None]] = []
    for span in found:
        if chosen and span[0] < chosen[-1][1]:
            prev_end = chosen[-2][1] if len(chosen) > 1 else 0
            if span[2] == "link" and chosen[-1][2] != "link" and span[0] >= prev_end:
                chosen[-1] = span
            continue
        chosen.append(span)
    return chosen


def _flanks(prev: str, nxt: str, opening: bool) -> bool:
    """Whether an emphasis delimiter we write between `prev` and `nxt` ("" at a line's edge) opens (`opening`) or
    closes, as CommonMark reads it (left- or right-flanking)."""
    def space(c: str) -> bool:
        return c == "" or c.isspace()

    def punct(c: str) -> bool:
        return c != "" and unicodedata.category(c)[0] in "PS"
    if opening:
        return not space(nxt) and (not punct(nxt) or space(prev) or punct(prev))
    return not space(prev) and (not punct(prev) or space(nxt) or punct(nxt))


def _write_line(text: str, start: int, end: int, spans: Sequence[tuple[int, int, str, str | None]]) -> str:
    """text[start:end] (one line of a block) as Markdown: the marks inside it written as links and emphasis (an
    emphasis CommonMark would not read as one stays plain text), the rest escaped (markdown_escape.line)."""
    while start < end and text[start] in " \t":
        start += 1
    if not spans:
        return escape.line(text[start:end])
    parts: list[tuple[int, int] | str] = []  # plain text[lo:hi] as (lo, hi), and markup as written
    at, link_end, markup_end = start, -1, -1
    for s0, s1, kind, address in spans:
        if s0 < at or s1 > end or s1 <= s0:
            continue
        if kind == "link":
            parts += [(at, s0), *([" "] if s0 == link_end else []),  # two links that touch: a tag list
                      "[" + escape.link_text(text[s0:s1]) + f"]({address})"]
            at = link_end = markup_end = s1
            continue
        lo, hi = s0, s1
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        prev = ")" if lo == link_end else text[lo - 1] if lo > start else ""
        nxt = "[" if any(sp[0] == hi and sp[2] == "link" for sp in spans) else text[hi] if hi < end else ""
        # (an emphasis that touches the one before it would make one run of their delimiters: it stays plain)
        if lo < hi and lo != markup_end and _flanks(prev, text[lo], True) and _flanks(text[hi - 1], nxt, False):
            mark = _EMPHASIS[kind]
            parts += [(at, lo), mark + escape.inline(text[lo:hi], mark[0], mark[0]) + mark]
            at = markup_end = hi
    parts.append((at, end))
    out: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
            continue
        after = next((p[0] for p in parts[i + 1:] if isinstance(p, str)), "")
        if part[0] == start:  # the line's start: block markup there is escaped too
            out.append(escape.line(text[part[0]:part[1]], after))
        elif part[1] > part[0]:
            out.append(escape.inline(text[part[0]:part[1]], out[-1][-1] if out and out[-1] else "", after))
    return "".join(out)


def _lines(b: Block, base: str | None = None, skip: int = 0) -> list[str]:
    """The block's non-empty lines as Markdown (_write_line), with its links and emphasis when it has marks;
    `skip`: characters at the start of the text written as they are (an ordered list item's number)."""
    text = b.text.replace("\r", " ")  # CommonMark ends a line at a carriage return too
    spans = _spans(text, b.marks, base) if b.marks else []
    out: list[str] = []
    start = 0
    for raw in text.split("\n"):
        end = start + len(raw)
        if raw.strip():
            lead = text[start:skip] if start < skip else ""
            out.append(lead + _write_line(text, start + len(lead), end, spans))
        start = end + 1
    return out or [""]


def _table_of(b: Block) -> str:
    """The xpath of the table a row belongs to."""
    parts = b.xpath.split("/")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i].startswith("table["):
            return "/".join(parts[: i + 1])
    return b.xpath.rsplit("/", 1)[0]


def _table(rows: Sequence[Block]) -> str:
    cells = [[escape.cell(c) for c in r.text.split("\t")] for r in rows]
    width = max(len(c) for c in cells)
    cells = [c + [""] * (width - len(c)) for c in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(c) + " |" for c in cells[1:]]
    return "\n".join(lines)


def _list_root(b: Block) -> str:
    """The xpath of the outermost list a list item sits in."""
    parts = b.xpath.split("/")
    for i, part in enumerate(parts):
        if part.split("[", 1)[0] in ("ul", "ol", "dl"):
            return "/".join(parts[: i + 1])
    return b.xpath.rsplit("/", 1)[0]


def _list_depth(b: Block) -> int:
    return max(sum(t in ("ul", "ol", "dl") for t in _path_tags(b.tag_path)) - 1, 0)


def _ordered(b: Block) -> int:
    """The length of the number the segmenter put before an ordered list item's text ("3. "; 0: none)."""
    m = _ITEM_NUMBER.match(b.text)
    if not m:
        return 0
    lists = [t for t in _path_tags(b.tag_path) if t in ("ul", "ol", "dl")]
    return m.end() if lists and lists[-1] == "ol" else 0


def render_block(b: Block, kind: str, base: str | None = None) -> str:
    """One block (not a table row: those render together) as Markdown; `base`: the page's URL, against which
    relative link addresses are resolved."""
    if kind == "heading":
        return "#" * min(max(b.heading_level, 1), 6) + " " + escape.heading(b.text)
    if kind == "code":
        fence = escape.fence(b.text)
        return f"{fence}\n{b.text}\n{fence}"
    number = _ordered(b) if kind == "list-item" else 0
    lines = _lines(b, base if kind in ("paragraph", "list-item", "quote") else None, number)
    if kind == "quote":
        return "\n".join("> " + ln for ln in lines)
    if kind == "list-item":
        indent = "  " * _list_depth(b)
        first = lines[0] if number else "- " + lines[0]
        return "\n".join([indent + first, *(indent + "  " + ln for ln in lines[1:])])
    return "  \n".join(lines)


def folded(text: str) -> str:
    """Text compared as a title is: white space collapsed, case folded."""
    return " ".join(text.split()).casefold()


def standfirst_markdown(text: str) -> str:
    """The standfirst as an emphasised Markdown paragraph ("" when there is none)."""
    flat = " ".join(text.split())
    return "*" + escape.inline(flat, "*", "*") + "*" if flat else ""


def text_markdown(title: str, text: str, standfirst: str = "") -> str:
    """Markdown of a page from an extractor that gives text, no blocks: `# title` once, the standfirst, then each
    non-empty line of the text as a paragraph (a line that repeats the title left out)."""
    seen_title = folded(title)
    paragraphs = [escape.line(ln) for ln in text.splitlines() if ln.strip() and folded(ln) != seen_title]
    head = [f"# {escape.heading(title)}"] if seen_title else []
    return "\n\n".join([*head, *([standfirst_markdown(standfirst)] if standfirst.strip() else []), *paragraphs]) + "\n"


def to_markdown(title: str, blocks: Sequence[Block], base: str | None = None, standfirst: str = "") -> str:
    """Markdown of a page: `# title` once, the standfirst as an emphasised paragraph, then the kept blocks in page
    order (module docstring); `base`: the page's URL (relative links are resolved against it)."""
    out: list[str] = [f"# {escape.heading(title)}"] if title.strip() else []
    if standfirst.strip():
        out.append(standfirst_markdown(standfirst))
    seen_title = folded(title)
    kinds = [block_kind(b) for b in blocks]
    i = 0
    while i < len(blocks):
        b, kind = blocks[i], kinds[i]
        if kind == "table-row":
            table = _table_of(b)
            j = i
            while j < len(blocks) and kinds[j] == "table-row" and _table_of(blocks[j]) == table:
                j += 1
            out.append(_table(blocks[i:j]))
            i = j
            continue
        if kind == "heading" and seen_title and folded(b.text) == seen_title:
            i += 1
            continue
        rendered = render_block(b, kind, base)
        if kind == "heading" and seen_title and rendered.startswith("# "):
            rendered = "#" + rendered  # the title is the page's one top-level heading
        if kind == "list-item" and out and i and kinds[i - 1] == "list-item" \
                and _list_root(blocks[i - 1]) == _list_root(b):
            out[-1] += "\n" + rendered  # items of one list stay together
        else:
            out.append(rendered)
        i += 1
    return "\n\n".join(out) + "\n" if out else ""


def front_matter(fields: Mapping[str, str | Sequence[str] | None]) -> str:
    """YAML front matter of a page's metadata (the fields that are set, in order; "" when none is): each value
    a double-quoted YAML string (markdown_escape.yaml_string: read as Markdown by a renderer that knows no front
    matter, it is text, never HTML or a link), a list (captions, comments) a YAML sequence of them, the date as
    YYYY-MM-DD."""
    lines: list[str] = []
    for k, v in fields.items():
        if not v:
            continue
        if isinstance(v, str):
            lines.append(f"{k}: {v if k == 'date' and _ISO_DATE.fullmatch(v) else escape.yaml_string(v)}")
        else:
            lines += [f"{k}:", *(f"  - {escape.yaml_string(item)}" for item in v)]
    return "---\n" + "\n".join(lines) + "\n---\n\n" if lines else ""
