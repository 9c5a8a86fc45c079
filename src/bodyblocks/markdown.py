"""Kept blocks -> Markdown that keeps their structure, and each block's kind.

    block_kind(block)                  # "heading", "paragraph", "list-item", "table-row", "code", "quote"
    to_markdown(title, kept_blocks)    # the title once as "# ...", then the blocks in page order

What each kind becomes:
  heading     "#" x level (h1..h6); a heading that repeats the title is left out (the title is written once);
  list-item   "- item" (ordered items keep the number the segmenter gave them, "3. item"), indented two
              spaces per enclosing list;
  table-row   consecutive rows of one table as a GitHub table (the first row is the header; cells are the
              row's tab-separated parts, walk.py; "|" escaped);
  code        a fenced block (```), lines as they are;
  quote       "> " before each line;
  paragraph   the text, a line break inside it kept as a Markdown hard break.
The kinds come from the segmenter's block fields alone (tag, tag path, heading level, list and cell flags),
so any block extractor's kept blocks render the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

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


def render_block(b: Block, kind: str) -> str:
    """One block (not a table row: those render together) as Markdown."""
    lines = [ln for ln in b.text.split("\n") if ln.strip()] or [""]
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


def to_markdown(title: str, blocks: Sequence[Block]) -> str:
    """Markdown of a page: `# title` once, then the kept blocks in page order (module docstring)."""
    out: list[str] = [f"# {title.strip()}"] if title.strip() else []
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
        rendered = render_block(b, kind)
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
