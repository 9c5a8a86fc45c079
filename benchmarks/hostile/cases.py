"""One input the hostile run must account for (Case), and the checks of an ok page's report line
and output."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[dict[str, Any], str | None], str | None]  # (report line, output text) -> problem or None


@dataclass
class Case:
    """One input the run must account for, and how."""

    name: str
    expect: tuple[str, ...]  # accepted outcomes, preferred first: "ok", "failed:<reason>", "failed:*", "absent"
    path: str | None = None  # the input path as the report prints it ("input"), for files and dataset records
    rec_id: str | None = None  # a dataset record matched by its report id
    line_no: int | None = None  # a dataset record with no usable id: matched by "pages.jsonl line N" in its error
    sentence: str | None = None  # must be in the output of an ok page
    checks: list[tuple[str, Check]] = field(default_factory=list)  # extra checks on an ok page
    good: bool = False  # one of the good pages
    under: bool = False  # claims the report lines of anything under `path` too (a folder that must not be walked)
    note: str = ""

    @property
    def must_report(self) -> bool:
        return "absent" not in self.expect



def truncated(line: dict[str, Any], _text: str | None) -> str | None:
    return None if line.get("truncated") is True else f"truncated is {line.get('truncated')!r}, not true"


def no_body(line: dict[str, Any], text: str | None) -> str | None:
    return None if line.get("no_body") or not (text or "").strip() else f"{line.get('chars')} chars kept as body"


def contains(word: str) -> Check:
    def check(_line: dict[str, Any], text: str | None) -> str | None:
        return None if word in (text or "") else f"{word!r} not in the output (text damaged)"
    return check


def encoding_not(*bad: str) -> Check:
    def check(line: dict[str, Any], _text: str | None) -> str | None:
        enc = str(line.get("encoding") or "").lower().replace("_", "-")
        return f"decoded as {enc}" if any(enc.startswith(b) for b in bad) else None
    return check


def encoding_is(*good: str) -> Check:
    def check(line: dict[str, Any], _text: str | None) -> str | None:
        enc = str(line.get("encoding") or "").lower().replace("_", "-")
        return None if any(enc.startswith(g) for g in good) else f"decoded as {enc}, not {'/'.join(good)}"
    return check


def id_inside(line: dict[str, Any], _text: str | None) -> str | None:
    key = str(line.get("id"))
    parts = re.split(r"[/\\]", key)
    return f"id {key!r} leaves the folder" if key.startswith(("/", "\\")) or ".." in parts else None
