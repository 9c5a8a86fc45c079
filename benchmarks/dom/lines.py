"""Rendered lines and our blocks compared (a line found when its white-space-free, case-folded form is in a
block), the prologue check, and the pages chosen for the benchmark."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

THRESHOLD = 0.9
NON_ZH_PAGES = 2000  # non-Chinese pages, spread evenly over the datasets (every Chinese page is added)
SHORT = 80  # characters of a missing line kept in the doc and JSON
_WS = re.compile(r"\s+")
_INVISIBLE_CHARS = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")
# what may stand before <html> without starting the tree early: white space, <?xml?>, doctype, comments
_PROLOGUE = re.compile(r"(?:\s+|<\?[^>]*>|<!doctype[^>]*>|<!--.*?-->)*", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<html[\s>/]", re.IGNORECASE)
_FIRST_TAG = re.compile(r"<\s*([a-zA-Z][a-zA-Z0-9:-]*)")


# ----------------------------------------------------------------------------------------- text and lines
def squash(text: str) -> str:
    """White-space-free, case-folded form of a text (CSS text-transform applies in innerText)."""
    return _WS.sub("", _INVISIBLE_CHARS.sub("", text)).casefold()


def rendered_lines(inner_text: str) -> list[str]:
    """Non-empty lines of innerText, white space collapsed; lines without a letter, digit or CJK character
    (str.isalnum covers all three) are skipped."""
    lines = (_WS.sub(" ", _INVISIBLE_CHARS.sub("", line)).strip() for line in inner_text.split("\n"))
    return [line for line in lines if any(c.isalnum() for c in line)]


def line_score(lines: list[str], block_texts: list[str]) -> dict[str, Any]:
    """How many rendered lines (and their characters) our blocks hold; `missing` keeps the rest in order.

    A line is found when its squashed form is a squashed line of a block (a set look-up) or a substring of
    all squashed blocks joined (lines that a block splits, or that join several blocks).
    """
    squashed = [squash(t) for t in block_texts]
    block_lines = {squash(part) for t in block_texts for part in t.split("\n")}
    block_lines.update(squashed)
    joined = "".join(squashed)
    verdict: dict[str, bool] = {}
    found = chars = found_chars = 0
    missing: list[str] = []
    for line in lines:
        key = squash(line)
        if not key:
            continue
        ok = verdict.get(key)
        if ok is None:
            ok = verdict[key] = key in block_lines or key in joined
        chars += len(key)
        if ok:
            found += 1
            found_chars += len(key)
        else:
            missing.append(line)
    n = sum(1 for line in lines if squash(line))
    return {
        "lines": n,
        "found": found,
        "chars": chars,
        "found_chars": found_chars,
        "line_share": found / n if n else None,
        "char_share": found_chars / chars if chars else None,
        "missing": missing,
    }


def prologue_markup(text: str) -> str | None:
    """What stands before <html> other than white space, <?xml?>, doctype and comments ("<script>", "text"),
    or None (also when the page has no <html> tag)."""
    m = _HTML_TAG.search(text)
    if m is None:
        return None
    end = _PROLOGUE.match(text).end()
    if end >= m.start():
        return None
    tag = _FIRST_TAG.match(text, end)
    return f"<{tag.group(1).lower()}>" if tag else "text"


# ----------------------------------------------------------------------------------------- selection
def _spread(items: list[Any], k: int) -> list[Any]:
    """k items spread evenly over a list (all of them when k >= len)."""
    n = len(items)
    if k >= n:
        return list(items)
    return [items[int((i + 0.5) * n / k)] for i in range(k)]


def _allocate(available: dict[str, int], total: int) -> dict[str, int]:
    """Split `total` over datasets as evenly as their sizes allow (water filling)."""
    share = dict.fromkeys(available, 0)
    left, open_ = total, [d for d in available if available[d] > 0]
    while left > 0 and open_:
        each = max(1, left // len(open_))
        for d in list(open_):
            add = min(each, available[d] - share[d], left)
            share[d] += add
            left -= add
            if share[d] >= available[d]:
                open_.remove(d)
            if left == 0:
                break
    return share


def select_pages(root: Path, per_dataset: int | None, non_zh: int) -> list[dict[str, Any]]:
    """Every Chinese page plus `non_zh` others spread over the datasets; or `per_dataset` pages of each dataset
    spread over it (a quick run)."""
    records: dict[str, list[dict[str, Any]]] = {}
    for ds in sorted(p.parent for p in root.glob("*/pages.jsonl")):
        with open(ds / "pages.jsonl", encoding="utf-8") as fh:
            records[ds.name] = [{**json.loads(line), "dataset": ds.name} for line in fh if line.strip()]
    chosen: list[dict[str, Any]] = []
    if per_dataset is not None:
        for recs in records.values():
            chosen += _spread(recs, per_dataset)
        return chosen
    others = {d: [r for r in recs if r.get("lang") != "zh"] for d, recs in records.items()}
    share = _allocate({d: len(v) for d, v in others.items()}, non_zh)
    for d, recs in records.items():
        picked = {r["id"] for r in _spread(others[d], share[d])}
        chosen += [r for r in recs if r.get("lang") == "zh" or r["id"] in picked]
    return chosen



def short(line: str, n: int = SHORT) -> str:
    return line if len(line) <= n else line[: n - 1] + "…"
