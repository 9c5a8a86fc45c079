"""Page text and link addresses written into Markdown so that a CommonMark renderer reads them as text.

    inline(text, before, after)   # one piece of a line: inline markup escaped; before/after: the characters
                                  # around it in the output ("" at a line's edge)
    line(text)                    # one line of a block: inline markup and the block markup at its start
    block_escape_at(text)         # where a line's block markup starts (None: it has none)
    heading(text)                 # a heading's text (one line; a trailing "#" run that would close it kept)
    cell(text)                    # a table cell (inline markup and "|")
    link_text(text)               # the text of a link (every bracket too)
    fence(code)                   # a code fence longer than any backtick run in the code
    destination(href, base)       # a link's address as Markdown writes it, or None: left as plain text
    yaml_string(value)            # a double-quoted YAML string that no Markdown renderer reads as markup

What is escaped (a backslash before it), and only where CommonMark could read it as markup, so that prose
stays readable: a backtick (code spans); a "*" or "_" run unless white space is on both sides of it (or, for "_",
a letter or digit: snake_case) and so it can neither open nor close emphasis; a "]" before "(" or ":" (links,
images, link reference definitions: none can form without one); a "<" not followed by white space (raw HTML,
autolinks); a "&" that starts an entity or a numeric character reference; a "\\" before punctuation or at the
end of a piece (a backslash escape, a hard line break). At the start of a line: an ATX heading's "#", a block
quote's ">", a bullet ("-", "+", "*") or ordered list marker ("1." "1)"), a thematic break, a setext underline
("===", "---"), a code fence ("```", "~~~") and a table's delimiter row; leading spaces are dropped (an indented
code block). Inside code blocks nothing is escaped: the fence is longer than any backtick run in the code.

Link addresses: only http, https and mailto addresses, relative ones and fragments become links. A browser
decodes entities and drops tabs, newlines and leading control characters and spaces before it reads the scheme,
and a Markdown renderer decodes entities and backslash escapes once more: the scheme is judged on every such
reading (entities and percent-escapes decoded, white space, control characters, backslashes and invisible
format characters taken out), and an address any reading gives another scheme (javascript:, vbscript:, data:,
file:, ...) is no link. An address that is kept is written with white space, control characters, "<", ">", "(",
")", '"', "`" and "\\" percent-encoded, and a "&" that would start an entity backslash-escaped.
"""

from __future__ import annotations

import html
import json
import re
import string
from functools import lru_cache
from urllib.parse import quote, unquote, urljoin

_PUNCT = frozenset(string.punctuation)  # CommonMark's ASCII punctuation: what a backslash escapes
_SPACE = frozenset(" \t")  # "" is a line's edge, which CommonMark counts as white space too
_INLINE = {always: re.compile(r"\*+|_+|[\\`\]<&!" + re.escape(always) + "]") for always in ("", "|", "[]")}
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# block markup at the start of a line (leading spaces dropped): its first character gets the backslash, or an
# ordered list marker's "." or ")"
_ORDERED = re.compile(r"\d{1,9}([.)])(?:[ \t]|$)")
_BLOCK = re.compile(
    r"#{1,6}(?:[ \t]|$)"  # ATX heading
    r"|>"  # block quote
    r"|[-+*](?:[ \t]|$)"  # bullet list item
    r"|(?:\*[ \t]*){3,}$|(?:-[ \t]*){3,}$|(?:_[ \t]*){3,}$"  # thematic break
    r"|=+[ \t]*$|-+[ \t]*$"  # setext heading underline
    r"|```|~~~"  # code fence
    r"|\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$"  # a table's delimiter row
)
_CLOSING_HASHES = re.compile(r"(?:^|[ \t])(#+)[ \t]*$")  # an ATX heading's optional closing sequence


def _escapes(c: str, prev: str, nxt: str, end: bool) -> bool:
    """Whether a candidate (one character, or a "*"/"_" run starting with `c`) needs a backslash, given the
    characters around it ("" at a line's edge) and whether it ends the piece."""
    if c in "*_":
        if prev in _SPACE or prev == "":
            return not (nxt in _SPACE or nxt == "")
        return not (c == "_" and prev.isalnum() and nxt.isalnum())
    if c == "\\":
        return end or nxt in _PUNCT
    if c == "]":
        return nxt in ("(", ":")
    if c == "!":
        return nxt == "["  # an image
    if c == "<":
        return nxt != "" and nxt not in _SPACE
    return True  # "`", and "&" where it starts an entity; "[" and "|" are candidates only in `always`


def inline(text: str, before: str = "", after: str = "", always: str = "") -> str:
    """One piece of a line with its inline markup escaped; `before`, `after`: the output's characters next to
    it ("" at a line's edge); `always`: characters escaped wherever they are ("|" in a table cell, "[]" in a
    link's text)."""
    out: list[str] = []
    at = 0
    for m in _INLINE[always].finditer(text):
        j, k = m.span()
        c = text[j]
        if c == "&" and not _ENTITY.match(text, j):
            continue
        prev = text[j - 1] if j else before
        nxt = text[k] if k < len(text) else after
        if c in always or _escapes(c, prev, nxt, k == len(text)):
            out.append(text[at:j])
            out.append("".join("\\" + ch for ch in m.group()))
            at = k
    if not out:
        return text
    out.append(text[at:])
    return "".join(out)


def block_escape_at(text: str) -> int | None:
    """Where the block markup that starts a line (its leading spaces dropped) starts: the index of the character
    that gets a backslash, or None."""
    m = _ORDERED.match(text)
    if m:
        return m.start(1)
    return 0 if _BLOCK.match(text) else None


def line(text: str, after: str = "") -> str:
    """One line of a paragraph, list item or quote, its leading spaces dropped, its markup escaped."""
    text = text.lstrip(" \t")
    at = block_escape_at(text)
    if at is None:
        return inline(text, "", after)
    return inline(text[:at], "", text[at]) + "\\" + text[at] + inline(text[at + 1:], text[at], after)


def heading(text: str) -> str:
    """A heading's text on one line, inline markup escaped, a closing run of "#" escaped."""
    out = inline(" ".join(text.split()))
    m = _CLOSING_HASHES.search(out)
    return out[: m.start(1)] + "\\" + out[m.start(1):] if m else out


def cell(text: str) -> str:
    """A table cell's text on one line: inline markup and "|" escaped."""
    return inline(" ".join(text.split()), always="|")


def link_text(text: str, before: str = "[", after: str = "]") -> str:
    """A link's text: inline markup and every bracket escaped."""
    return inline(text, before, after, always="[]")


def fence(code: str) -> str:
    """A backtick fence longer than every backtick run in the code (at least three)."""
    return "`" * max(3, max((len(r) for r in re.findall(r"`+", code)), default=0) + 1)


_ALLOWED_SCHEMES = frozenset(("http", "https", "mailto"))
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# taken out before the scheme is judged: white space, control characters, backslashes, invisible format characters
_HIDDEN = re.compile(r"[\s\x00-\x20\x7f-\x9f\\\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                     r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8]")
_LEADING_JUNK = "".join(map(chr, range(0x21)))  # what a browser strips from an address's ends: controls, space
_BROWSER_DROPS = re.compile(r"[\t\n\r]")  # what a browser takes out of an address anywhere
_PLAIN_ADDRESS = re.compile(r"[A-Za-z0-9/:.?=_~+,;@!$*'#%\-\[\]]*")  # nothing in it to encode or escape
_ENCODE_SAFE = "".join(c for c in string.punctuation if c not in '<>()"`\\') + string.ascii_letters + string.digits


def _readings(href: str) -> set[str]:
    """The address as each decoding could read it: entities and percent-escapes decoded, up to three times each,
    in either order."""
    seen = {href}
    frontier = [href] if "&" in href or "%" in href else []
    for _ in range(3):
        frontier = [d for s in frontier for d in (html.unescape(s), unquote(s)) if d not in seen]
        seen.update(frontier)
        if not frontier:
            break
    return seen


def scheme_allowed(href: str) -> bool:
    """Whether no reading of the address has a scheme other than http, https or mailto."""
    for reading in _readings(href):
        m = _SCHEME.match(_HIDDEN.sub("", reading))
        if m and m.group(1).lower() not in _ALLOWED_SCHEMES:
            return False
    return True


def _encode(url: str) -> str:
    """An address written for a Markdown link destination (module docstring)."""
    if _PLAIN_ADDRESS.fullmatch(url):
        return url
    out = []
    for c in url:
        if c in _ENCODE_SAFE or (ord(c) > 127 and c.isprintable() and not c.isspace()):
            out.append(c)
        else:
            out.append(quote(c.encode("utf-8", "surrogatepass"), safe=""))
    encoded = "".join(out)
    return _ENTITY.sub(lambda m: "\\" + m.group(), encoded)


@lru_cache(maxsize=64)
def _base_allowed(base: str) -> bool:
    return scheme_allowed(base)


def destination(href: str | None, base: str | None = None) -> str | None:
    """A link's address as Markdown writes it (resolved against `base`, the page's URL, when known and its scheme
    is allowed), or None for one that is kept as plain text: an empty one, an in-page `#` anchor, or one whose
    scheme is not allowed (module docstring)."""
    href = _BROWSER_DROPS.sub("", (href or "").strip(_LEADING_JUNK))
    if not href or href.startswith("#") or not scheme_allowed(href):
        return None
    if base and _base_allowed(base):  # an allowed address joined to an allowed page URL: an allowed scheme
        try:
            href = urljoin(base, href)
        except ValueError:  # a malformed address (an unclosed IPv6 bracket): kept as the page wrote it
            pass
    return _encode(href)


_YAML_ESCAPE = re.compile(r"[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff<]"
                          r"|\](?=[(:\[])")


def yaml_string(value: str) -> str:
    """A double-quoted YAML string of the value (JSON's escapes are YAML's), with characters YAML may not hold
    raw, "<", a "]" before "(", ":" or "[" and a "&" that starts an entity written as \\u escapes: a Markdown
    renderer that knows no front matter reads the block as a paragraph and a setext heading, never as HTML or a
    link."""
    out = json.dumps(value, ensure_ascii=False)
    out = _YAML_ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return _ENTITY.sub(lambda m: "\\u0026" + m.group()[1:], out)
