"""Kept blocks -> Markdown that keeps their structure, and each block's kind.

    block_kind(block)                  # "heading", "paragraph", "list-item", "table-row", "code", "quote"
    to_markdown(title, kept_blocks)    # the title once as "# ...", then the blocks in page order

The standfirst (Extraction.standfirst), when there is one, follows the title as one emphasised paragraph
("*…*", its white space collapsed, inline markup characters escaped). What each kind becomes:
  heading     "#" x level (h1..h6); a heading that repeats the title is left out (the title is written once,
              the page's one "# " heading: an h1 below it is written as "## ");
  list-item   "- item" (ordered items keep the number the segmenter gave them, "3. item"), indented two
              spaces per enclosing list;
  table-row   consecutive rows of one table as a GitHub table (the first row is the header; cells are the
              row's tab-separated parts, walk.py; "|" escaped);
  code        a fenced block (```), lines as they are;
  quote       "> " before each line;
  paragraph   the text, a line break inside it kept as a Markdown hard break.
Inside paragraphs, list items and quotes, the links and emphasis the segmenter noted (Block.marks) are kept:
`[text](address)` (relative addresses resolved against the page's URL when it is known; `javascript:`, `data:`
and `vbscript:` links and in-page `#` anchors are left as plain text), `**strong**`, `*emphasis*`; two links that
touch (a tag list) get a space between them.
The kinds come from the segmenter's block fields alone (tag, tag path, heading level, list and cell flags),
so any block extractor's kept blocks render the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import urljoin

from bodyblocks.types import Block

KINDS = ("heading", "paragraph", "list-item", "table-row", "code", "quote")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_LEADING_MARK = re.compile(r"^([#>+*=-]|\d+[.)]\s)")  # a line that Markdown would read as markup


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


def _escape(line: str) -> str:
    return "\\" + line if _LEADING_MARK.match(line) else line


_UNSAFE_SCHEMES = ("javascript:", "data:", "vbscript:")
_LINK_TEXT = re.compile(r"([\\\[\]])")
_EMPHASIS = {"strong": "**", "em": "*"}
_EMPHASIS_MARK = re.compile(r"([*_`\[\]\\])")  # inline markup, escaped inside the standfirst's emphasis


def _address(href: str | None, base: str | None) -> str | None:
    """A link's address as Markdown writes it, or None for one that is kept as plain text."""
    href = (href or "").strip()
    if not href or href.startswith("#") or href.lower().replace(" ", "").startswith(_UNSAFE_SCHEMES):
        return None
    if base:
        try:
            href = urljoin(base, href)
        except ValueError:  # a malformed address (an unclosed IPv6 bracket): kept as the page wrote it
            pass
    return href.replace(" ", "%20").replace("(", "%28").replace(")", "%29").replace("<", "%3C").replace(">", "%3E")


def _spans(text: str, marks: Sequence[tuple[str, str, str | None]], base: str | None
           ) -> list[tuple[int, int, str, str | None]]:
    """Where the block's marks sit in its text: (start, end, kind, address), in order, none overlapping (a link
    wins over an emphasis it overlaps; a mark inside another is dropped)."""
    found: list[tuple[int, int, str, str | None]] = []
    cursor = 0
    for kind, mtext, href in marks:
        address = _address(href, base) if kind == "link" else None
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


def _marked_lines(b: Block, base: str | None = None, escape: bool = False) -> list[str]:
    """The block's non-empty lines with its links and emphasis written as Markdown (`escape`: a line that
    Markdown would read as markup gets a backslash, as `_escape` gives it)."""
    text = b.text
    spans = _spans(text, b.marks, base) if b.marks else []
    out: list[str] = []
    start = 0
    for raw in text.split("\n"):
        end = start + len(raw)
        if raw.strip():
            pieces, at, link_end = [], start, -1
            for s0, s1, kind, address in spans:
                if s0 < start or s1 > end:
                    continue
                pieces.append(text[at:s0])
                inner = text[s0:s1]
                if kind == "link":
                    if s0 == link_end:
                        pieces.append(" ")  # two links that touch: a tag list, not one word
                    pieces.append("[" + _LINK_TEXT.sub(r"\\\1", inner) + f"]({address})")
                    link_end = s1
                else:
                    pieces.append(f"{_EMPHASIS[kind]}{inner}{_EMPHASIS[kind]}")
                at = s1
            pieces.append(text[at:end])
            line = "".join(pieces)
            if escape and _LEADING_MARK.match(raw) and line.startswith(raw[:1]):
                line = "\\" + line
            out.append(line)
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
    cells = [[c.strip().replace("|", "\\|").replace("\n", " ") for c in r.text.split("\t")] for r in rows]
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


def render_block(b: Block, kind: str, base: str | None = None) -> str:
    """One block (not a table row: those render together) as Markdown; `base`: the page's URL, against which
    relative link addresses are resolved."""
    lines = [ln for ln in b.text.split("\n") if ln.strip()] or [""]
    if b.marks and kind in ("paragraph", "list-item", "quote"):
        marked = _marked_lines(b, base, escape=kind == "paragraph")
        if kind == "paragraph":
            return "  \n".join(marked)
        lines = marked
    if kind == "heading":
        return "#" * min(max(b.heading_level, 1), 6) + " " + " ".join(ln.strip() for ln in lines)
    if kind == "code":
        fence = "````" if "```" in b.text else "```"
        return f"{fence}\n{b.text}\n{fence}"
    if kind == "quote":
        return "\n".join("> " + ln for ln in lines)
    if kind == "list-item":
        indent = "  " * _list_depth(b)
        first = lines[0] if re.match(r"^\d+\. ", lines[0]) else "- " + lines[0]
        return "\n".join([indent + first, *(indent + "  " + ln for ln in lines[1:])])
    return "  \n".join(_escape(ln) for ln in lines)


def folded(text: str) -> str:
    """Text compared as a title is: white space collapsed, case folded."""
    return " ".join(text.split()).casefold()


def standfirst_markdown(text: str) -> str:
    """The standfirst as an emphasised Markdown paragraph ("" when there is none)."""
    flat = " ".join(text.split())
    return "*" + _EMPHASIS_MARK.sub(r"\\\1", flat) + "*" if flat else ""


def to_markdown(title: str, blocks: Sequence[Block], base: str | None = None, standfirst: str = "") -> str:
    """Markdown of a page: `# title` once, the standfirst as an emphasised paragraph, then the kept blocks in page
    order (module docstring); `base`: the page's URL (relative links are resolved against it)."""
    out: list[str] = [f"# {title.strip()}"] if title.strip() else []
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


def front_matter(fields: dict[str, str | None]) -> str:
    """YAML front matter of a page's metadata (the fields that are set, in order; "" when none is): each value
    a double-quoted YAML string (JSON's escapes are YAML's), the date as YYYY-MM-DD."""
    lines = [f"{k}: {v if k == 'date' and _ISO_DATE.fullmatch(v) else json.dumps(v, ensure_ascii=False)}"
             for k, v in fields.items() if v]
    return "---\n" + "\n".join(lines) + "\n---\n\n" if lines else ""
