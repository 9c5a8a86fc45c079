"""`--format md` output that a Markdown renderer turns into live HTML or script links.

Writes hostile pages (raw HTML, script addresses hidden behind entities, tabs, backslashes and percent-escapes,
Markdown syntax as page text, a title and metadata that close the <title> and open a <script>), runs

    bodyblocks extract IN --out OUT --format md --extractor heuristic   (and with the default extractor, whose
                                                                          kept blocks keep their links)

and renders each .md file with markdown-it-py as a CommonMark renderer does (raw HTML on, its own link check
off, so that only our escaping stands between the page and the reader). Targets: no raw HTML in any rendered
file (no html_inline or html_block token: no `<script`, `<img`, `onerror=`), every link's address http, https,
mailto or relative, and each page's marker sentence rendered as the page's text. Without markdown-it-py the
targets are reported unmet with the reason (`pip install markdown-it-py`).

The corpus (HOSTILE_TEXT, SCRIPT_HREFS, SAFE_HREFS) and the checks (problems, visible) serve the unit tests too.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from bodyblocks.runtime.files import REPO_ROOT

Target = tuple[str, bool, str]

# page text that CommonMark reads as markup when it is written as it is
HOSTILE_TEXT = [
    "<img src=x onerror=alert(1)>", "</title><script>alert(1)</script>", "<script>alert(1)</script>",
    "<svg/onload=alert(1)>", "<a href=javascript:alert(1)>x</a>", "<!-- comment -->", "<?php echo 1; ?>",
    "<![CDATA[x]]>", "<!DOCTYPE html>", "<div>", "</div>", "<style>", "<javascript:alert(1)>",
    "<http://a.example/x>", "<a@b.example>", "a<b>c", "x<y", "a < b", "a <= b", "<", "1 <2",
    "[x](javascript:alert(1))", "![x](javascript:alert(1))", "[x]: javascript:alert(1)", "[x]", "[x][y]",
    "[x] (y)", "[a](<b>)", "*not emphasis*", "**not strong**", "_not em_", "__x__", "snake_case_name",
    "2 * 3 * 4", "a*b*c", "* x *", "`code`", "``double``", "```", "````", "~~~", "~~strike~~", "&amp;",
    "&lt;script&gt;", "&#60;script&#62;", "&#x3C;img&#x3E;", "&copy;", "AT&T", "&", "\\", "a\\", "\\*", "\\\\",
    "\\<img src=x onerror=alert(1)>", "# not a heading", "###", "## x ##", "C#", "x #", "#hashtag",
    "> not a quote", ">", "- not a list", "-", "+ x", "* x", "1. not a list", "1) x", "2024. year", "---", "***",
    "___", "===", "- - -", "| a | b |", "|---|---|", ":--", "a | b", "    indented code", "\tTab",
    "http://plain.example", "www.example.com", "foo@bar.example", "\u00a0*x*\u00a0", "*\u00a0x\u00a0*",
    "_\u00e9_", "\u00e9_\u00e9", "(*)", "\"*a*\"", "**", "__init__", "<b>bold</b>", "</", "<a", "<!", "<?",
    "javascript:alert(1)", "[", "]", "](", "]:", "![", "!", "|", "=", "x\n===", "x\n---", "x\n- y",
    "x\n# y", "x\r# y", "x\r<img src=x onerror=alert(1)>", "x\n    y", "<div\nonclick=alert(1)>",
    "[a\nb](javascript:alert(1))",
]
# link addresses that must never become links: script and data schemes, hidden the ways browsers and Markdown
# renderers decode them
SCRIPT_HREFS = [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
    "java\nscript:alert(1)", "java\rscript:alert(1)", "\x01javascript:alert(1)", "\u200bjavascript:alert(1)",
    "&#106;avascript:alert(1)", "&#x6A;avascript:alert(1)", "&#106avascript:alert(1)",
    "javascript&colon;alert(1)", "&amp;#106;avascript:alert(1)", "javascript\\:alert(1)",
    "java\\script:alert(1)", "%6Aavascript:alert(1)", "javascript%3Aalert(1)", "jav&#x09;ascript:alert(1)",
    "&#x6a&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3a;alert(1)", "vbscript:msgbox(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "DATA:text/html,<script>alert(1)</script>",
    "file:///etc/passwd", "javascript:alert(1)//http://a.example",
]
# addresses that stay links, with what the link must point at (percent-decoded)
SAFE_HREFS = [
    ("https://a.example/x", "https://a.example/x"), ("https://a.example/a b(c)", "https://a.example/a b(c)"),
    ("https://a.example/?q=<b>&r=1", "https://a.example/?q=<b>&r=1"),
    ("https://a.example/?a=1&amp;b=2", "https://a.example/?a=1&amp;b=2"), ("mailto:a@b.example", "mailto:a@b.example"),
    ("/path/x", "/path/x"), ("rel\\path", "rel\\path"), ("?q=`x`", "?q=`x`"), ("//cdn.example/x", "//cdn.example/x"),
]
ALLOWED_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_TAG = re.compile(r"</?([A-Za-z][\w:-]*)([^>]*)>")  # a tag in the rendered HTML
_QUOTED = re.compile(r'"[^"]*"')
_HANDLER = re.compile(r"\bon\w+\s*=", re.IGNORECASE)  # an event handler attribute (onerror=, onload=, ...)
# the tags a CommonMark renderer writes itself
_RENDERED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "em",
                  "strong", "a", "br", "hr", "table", "thead", "tbody", "tr", "th", "td"}


def renderer() -> Any:
    """markdown-it-py as a CommonMark renderer (raw HTML on) that checks no link itself (None: not installed)."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        return None
    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = lambda url: True  # noqa: ARG005 -- our escaping alone must keep script links out
    return md


def href_scheme(href: str) -> str | None:
    """The scheme a browser reads from a rendered link's address (None: a relative address)."""
    href = re.sub(r"[\t\n\r]", "", html.unescape(href)).lstrip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c"
                                                                  "\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17"
                                                                  "\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
    m = _SCHEME.match(href)
    return m.group(1).lower() if m else None


def _walk(tokens: list[Any]) -> Any:
    for t in tokens:
        yield t
        if t.children:
            yield from _walk(t.children)


def problems(md_text: str, md: Any) -> list[str]:
    """What a CommonMark renderer makes of the Markdown that a reader's browser would run: raw HTML, links
    whose scheme is not http, https or mailto, and any tag in the rendered HTML that the renderer does not write
itself (<script>, <img>, ...) or that carries an event handler (onerror=)."""
    found = []
    for t in _walk(md.parse(md_text)):
        if t.type in ("html_inline", "html_block"):
            found.append(f"raw HTML {t.content.strip()[:60]!r}")
        if t.type in ("link_open", "image"):
            href = str(t.attrGet("href") or t.attrGet("src") or "")
            if href_scheme(href) not in (None, *ALLOWED_SCHEMES):
                found.append(f"{t.type} to {href[:60]!r}")
    for name, attrs in _TAG.findall(md.render(md_text)):
        if name.lower() not in _RENDERED_TAGS or _HANDLER.search(_QUOTED.sub("", attrs)):
            found.append(f"<{name}{attrs[:60]}> in the HTML")
    return found


def visible(md_text: str, md: Any) -> str:
    """The text a reader sees in the rendered Markdown, white space collapsed (code blocks' text included)."""
    parts = []
    for t in _walk(md.parse(md_text)):
        if t.type in ("text", "code_inline", "code_block", "fence", "html_inline", "html_block"):
            parts.append(t.content)
        elif t.type in ("softbreak", "hardbreak") or t.nesting == 1 and t.block:
            parts.append(" ")
    return " ".join("".join(parts).split())


def links(md_text: str, md: Any) -> list[str]:
    """The rendered links' addresses, percent-decoded."""
    return [unquote(str(t.attrGet("href"))) for t in _walk(md.parse(md_text)) if t.type == "link_open"]


def _page(i: int, fragment: str, href: str) -> str:
    """A page whose article holds a hostile fragment (as text, escaped as HTML) three times, a link to `href`
    and a marker sentence."""
    frag = html.escape(fragment, quote=False)
    return (f"<html><head><title>{frag} title {i}</title>"
            f"<meta name='author' content=\"{html.escape(fragment)}\"></head><body><article>"
            f"<h1>Report {i} {frag}</h1><p>{frag}</p>"
            f"<p>Marker sentence {i} for the hostile page, long enough to be kept as body text by every extractor, "
            f"mentions {frag} inside it and a <a href=\"{html.escape(href)}\">linked {frag} phrase</a> too.</p>"
            f"<ul><li>{frag}</li><li>item <b>{frag}</b></li></ul><blockquote><p>{frag}</p></blockquote>"
            f"<table><tr><th>{frag}</th><th>b</th></tr><tr><td>a|{frag}</td><td>c</td></tr></table>"
            f"<pre>{frag}\n```</pre><p>Another paragraph of the article about the same subject, written to be "
            f"long enough that it is kept with the one before it by the model.</p></article></body></html>")


def _run(root: Path, extractor: str | None) -> tuple[Path, str]:
    out = root / f"out-{extractor or 'default'}"
    cmd = [sys.executable, "-m", "bodyblocks", "extract", str(root / "in"), "--out", str(out), "--format", "md",
           "--no-progress", *(["--extractor", extractor] if extractor else [])]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace", timeout=600)
    return out, proc.stderr[-300:] if proc.returncode not in (0, 1) else ""


def scenarios(root: Path) -> list[Target]:
    """Hostile pages through `--format md`, their output rendered and checked (module docstring)."""
    md = renderer()
    if md is None:
        why = "markdown-it-py is not installed (pip install markdown-it-py): the .md files were not rendered"
        return [("md output: no live HTML", False, why), ("md output: no script links", False, why)]
    (root / "in").mkdir()
    hrefs = SCRIPT_HREFS + [h for h, _ in SAFE_HREFS]
    for i, fragment in enumerate(HOSTILE_TEXT):
        page = _page(i, fragment, hrefs[i % len(hrefs)])
        (root / "in" / f"page{i:03d}.html").write_text(page, encoding="utf-8")
    targets: list[Target] = []
    for extractor in ("heuristic", None):
        out, failed = _run(root, extractor)
        name = extractor or "default extractor"
        files = sorted(out.glob("*.md"))
        live, lost = [], []
        for f in files:
            text = f.read_text(encoding="utf-8")
            live += [f"{f.name}: {p}" for p in problems(text, md)]
            i = int(f.stem[4:])
            if f"Marker sentence {i} for the hostile page" in text and \
                    f"mentions {' '.join(HOSTILE_TEXT[i].split())} inside it" not in visible(text, md):
                lost.append(f.name)
        ok = not failed and len(files) == len(HOSTILE_TEXT)
        detail = failed or f"{len(files)} of {len(HOSTILE_TEXT)} pages written"
        targets.append((f"md output ({name}): no live HTML, no script links", ok and not live,
                        f"{detail}; " + ("; ".join(live[:5]) + (f" (+{len(live) - 5})" if len(live) > 5 else "")
                                         if live else "none found")))
        targets.append((f"md output ({name}): page text reads back as written", ok and not lost,
                        f"{detail}; " + (f"text changed in {', '.join(lost[:5])}" if lost else "every marker intact")))
    return targets
