"""Do a page's blocks hold what Chromium displays? Rendered lines (innerText, JavaScript off) found in our blocks.

For each selected dataset page:
  1. the bytes are decoded as the extractor decodes them (bodyblocks.page.decode.to_text), and that text is written
     to a temporary file as UTF-8 behind a UTF-8 byte-order mark, so Chromium reads exactly the characters we
     parse: charset detection is not what is measured (a BOM rather than a leading <meta charset>: a tag before
     <!doctype> would switch Chromium to quirks mode and start the tree differently; the BOM overrides every
     declaration and adds nothing to the DOM). A <meta http-equiv=refresh> is renamed so the tab stays put;
  2. headless Chromium with JavaScript off (so <noscript> is displayed, as for any browser without JS), images
     off and every network request refused (the page's own stylesheets never load: inline <style> applies)
     loads the file, and `document.body.innerText` (documentElement's when there is no body) is read; renders
     are cached per page and decoded-text hash under ~/.cache/bodyblocks/dom_fidelity/;
  3. bodyblocks.page.segment.segment(bytes) gives our blocks;
  4. each non-empty rendered line (white space collapsed, at least one letter, digit or CJK character) counts as
     found when its white-space-free, case-folded form is a line of a block or a substring of all blocks joined.
     Only that direction is measured (rendered lines missing from our blocks), never text we keep and
     Chromium hides.

Pages under 0.9 get a cause, classified from where each missing line sits in an HTML5 tree (html5lib,
scripting off, as Chromium parses with JavaScript off) and in libxml2's tree (the one we walk), and the share
our walk would reach on html5lib's tree and on Lexbor's (selectolax) re-serialized tree (each optional).

Usage: python -m benchmarks.dom_fidelity [--root DIR] [--per-dataset N | --pages N] [--out runs/dom_fidelity/report.md]
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, need_root
from bodyblocks.capture import CHROMIUM_FLAGS
from bodyblocks.errors import InputError
from bodyblocks.page.decode import read_bytes, to_text
from bodyblocks.page.htmltags import INVISIBLE_TAGS
from bodyblocks.page.segment import segment, segment_tree
from bodyblocks.page.walk import walk_blocks
from bodyblocks.runtime.files import REPO_ROOT, write_atomic

RENDER_VERSION = "2"  # bump when what is rendered changes (file written, flags): the render cache keys on it
CACHE_DIR = Path.home() / ".cache" / "bodyblocks" / "dom_fidelity"
THRESHOLD = 0.9
NON_ZH_PAGES = 2000  # non-Chinese pages, spread evenly over the datasets (every Chinese page is added)
PAGE_TIMEOUT = 20.0
RECYCLE = 300  # pages per browser before a fresh one
MAX_CLASSIFIED = 60  # missing lines located in the trees per page
EXAMPLES = 3  # missing lines kept per page under the threshold
SHORT = 80  # characters of a missing line kept in the doc and JSON

# The capture's flags (a container, no background requests), JavaScript off, and requests that fail at once
# instead of hanging: nothing outside the saved file is loaded.
RENDER_FLAGS = (
    *CHROMIUM_FLAGS,
    "--blink-settings=scriptEnabled=false",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    "--proxy-server=http://127.0.0.1:9",  # nothing listens there: direct-IP requests are refused at once
    "--window-size=1280,2000",
)
CHROMIUM_PREFS = {
    "profile.managed_default_content_settings.javascript": 2,
    "profile.managed_default_content_settings.images": 2,
}
# The tab's URL, the body's innerText, and the innerText of the elements whose lines get their own count.
INNER_TEXT_JS = """
const root = document.body || document.documentElement;
const texts = sel => Array.from(document.querySelectorAll(sel)).map(e => e.innerText || '').filter(t => t.trim());
return [location.href, root ? root.innerText : '', texts('select'), texts('button'), texts('noscript')];
"""
PARTS = ("select", "button", "noscript")  # rendered lines inside these are counted apart (all pages, cheaply)
# A missing line is put down to the first of these whose innerText holds it (Chromium's own attribution).
PART_ORDER = ("noscript", "select", "button")
NOSCRIPT = "inside <noscript> (shown with JavaScript off)"
SELECT = "<select> options (innerText lists every one)"
BUTTON = "<button> label (we hide small buttons)"
PART_CAUSE = {"noscript": NOSCRIPT, "select": SELECT, "button": BUTTON}

_WS = re.compile(r"\s+")
_INVISIBLE_CHARS = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")
_REFRESH = re.compile(r"(<meta\b[^>]*?http-equiv\s*=\s*[\"']?\s*)refresh", re.IGNORECASE)
# what may stand before <html> without starting the tree early: white space, <?xml?>, doctype, comments
_PROLOGUE = re.compile(r"(?:\s+|<\?[^>]*>|<!doctype[^>]*>|<!--.*?-->)*", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<html[\s>/]", re.IGNORECASE)
_FIRST_TAG = re.compile(r"<\s*([a-zA-Z][a-zA-Z0-9:-]*)")
_HIDING_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# where Chromium shows no text (innerText never holds it), in an HTML5 tree
_CHROMIUM_HIDDEN = frozenset("head script style template title textarea iframe noembed noframes".split())
_SELECT = frozenset("select option optgroup datalist".split())
DIVERGENCE = ("libxml2 lost the text", "libxml2 put it inside", "libxml2 nests it")  # parser divergences

# The worst pages, inspected by hand (the HTML around a missing line): dataset/id -> what happened.
NOTES: dict[str, str] = {
    "l3s-gn1/l3s-f3d9f7be-b690-455e-a6c6-77c0644f68b0": (
        "parser divergence: an unknown <mbox> element after the <meta>s in <head>; HTML5 closes the head there and "
        "starts the body, libxml2 keeps <mbox> and the whole page inside <head>, which our walk skips (0 blocks); "
        "html5lib and Lexbor give 1.000"),
    "trafilatura-eval/traf-40f4743c7e899828": (
        "FAZ's no-JavaScript view: a <noscript><style>div:not(.faz-no-js){display:none!important}</style> hides "
        "the article, Chromium shows only the 'enable JavaScript' notice; we keep the article and drop the notice "
        "(the right answer for extraction)"),
    "daniel/20120117_www.aif.ua_ba56626e454701098f0c2d7c287ba60b5e027dcff50189015b444379": (
        "parser divergence: a stray <tr> after </table> inside the comment form of a display:none tab; HTML5 "
        "ignores it, libxml2 opens a <tr> that the following </form> and </div>s cannot close, so the rest of the "
        "page (the 'Читайте в разделе' box, the sidebar) sits inside <div id=tabs-block style='display: none'>; "
        "html5lib and Lexbor 0.852 (the rest is <select> options)"),
    "wcxb-dev/wcxb-4557": (
        "a <button>Toggle sub-navigation</button> after each menu link, on the link's line, and Search/Menu buttons: "
        "we hide small buttons by design"),
    "cleaneval-en/cleaneval-en-final-356": (
        "the site's navigation (tables of links) is the <noscript> fallback of menu.js: displayed without "
        "JavaScript; we show <noscript> only on app shells"),
    "dragnet/dragnet-366": (
        "CBS's list of network sites (BNET, CBS College Sports, ...) is a <noscript> fallback of a script-built "
        "menu"),
    "dragnet/dragnet-86": "the same CBS <noscript> list of network sites as dragnet-366",
    "dragnet/dragnet-44": "the same CBS <noscript> list of network sites as dragnet-366",
    "wcxb-dev/wcxb-2982": (
        "iFixit's header and menus: <button> labels, several of them screen-reader-only spans ('Select store') "
        "that the page's own stylesheet (not loaded here) hides"),
    "wcxb-dev/wcxb-0588": (
        "a mega-menu of <button>s, each an image, a category and a description ('Cases' + 'iPhone 17 & More'), "
        "under the 64-element mark, so hidden as buttons ('Â®' is double-encoded in the page's own bytes)"),
    "trafilatura-eval/traf-a93bcf12ee6b9a91": "search and menu <button>s ('Suchen', 'Aktionen ›') on many lines",
    "wcxb-dev/wcxb-2878": "the docs' search <button> ('Search ⌘/ctrl K') and sidebar toggle buttons",
    "wcxb-dev/wcxb-0003": "LinkedIn's cookie banner ('Accept Reject') and sign-in modal <button>s",
    "wcxb-dev/wcxb-0563": "Reddit's header <button>s ('Get App', screen-reader text 'Expand user menu')",
    "wcxb-dev/wcxb-4379": "accessibility-widget and cart <button>s ('Enable Accessibility', 'Close')",
    "cleaneval-en/cleaneval-en-final-131": (
        "two <noscript>s: a site banner as the page's very first tag (HTML5 closes that noscript at its <p>, in head "
        "a noscript holds only link/meta/style, so the banner is body text; libxml2 keeps it inside the noscript: a "
        "one-line parser divergence) and a 'best viewed with JavaScript' notice"),
    "cleaneval-en/cleaneval-en-final-678": (
        "checked: a <select> of 230 song titles (innerText lists every option; the closed control shows one)"),
    "dragnet/dragnet-R50": "checked: an archive <select> of weeks",
    "daniel/20120112_news.chinatimes.com_ed7743675e4bd1dc79f05b251c3a15f87958d281604c63cc9d5": (
        "checked: a section <select> ('分類瀏覽', '今日焦點', ...)"),
}
HAND_CHECKED = 15


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


# ----------------------------------------------------------------------------------------- rendering
class RenderCache:
    """innerText per page, appended as JSON lines; a record holds for the decoded text it was rendered from."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        if path.exists():
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:  # a line cut by a killed run
                        continue
                    self.records[rec["key"]] = rec

    def get(self, key: str, digest: str) -> dict[str, Any] | None:
        rec = self.records.get(key)
        return rec if rec is not None and rec.get("hash") == digest else None

    def put(self, rec: dict[str, Any]) -> None:
        self.records[rec["key"]] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def render_file_text(text: str) -> bytes:
    """What Chromium loads: the decoded text as UTF-8 behind a BOM, any meta refresh renamed."""
    return b"\xef\xbb\xbf" + _REFRESH.sub(r"\1x-refresh", text).encode("utf-8", errors="surrogatepass")


class Renderer:
    """One headless Chromium (JavaScript off) reused for many pages; restarted every `recycle` pages or after
    any failure."""

    def __init__(self, timeout: float = PAGE_TIMEOUT, recycle: int = RECYCLE) -> None:
        from bodyblocks.capture.chromium import check_available
        from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM

        self.webdriver = check_available(CHROMIUM, CHROMEDRIVER)
        self.chromium, self.chromedriver = CHROMIUM, CHROMEDRIVER
        self.timeout, self.recycle = timeout, recycle
        self.driver: Any = None
        self.served = 0
        self.starts = 0
        self.workdir = Path(tempfile.mkdtemp(prefix="dom_fidelity_"))
        self.profile: Path | None = None

    def _start(self) -> None:
        from selenium.webdriver.chrome.service import Service

        self.profile = Path(tempfile.mkdtemp(prefix="profile_", dir=self.workdir))
        options = self.webdriver.ChromeOptions()
        options.binary_location = self.chromium
        options.unhandled_prompt_behavior = "dismiss"
        for flag in (*RENDER_FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        options.add_experimental_option("prefs", CHROMIUM_PREFS)
        self.driver = self.webdriver.Chrome(service=Service(self.chromedriver), options=options)
        self.driver.set_page_load_timeout(self.timeout)
        self.driver.set_script_timeout(self.timeout)
        self.served = 0
        self.starts += 1

    def stop(self) -> None:
        if self.driver is not None:
            try:
                self.driver.quit()
            except Exception:  # noqa: BLE001 - a dead browser is still stopped
                pass
            self.driver = None
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def render(self, text: str) -> tuple[str, str, dict[str, list[str]]]:
        """(status, innerText, {part: innerTexts}): status "ok", "timeout", "navigated" (the tab left the file)
        or "error: ..."; `part` is one of PARTS."""
        from selenium.common.exceptions import TimeoutException

        if self.driver is None or self.served >= self.recycle:
            self.stop()
            self._start()
        self.served += 1
        page = self.workdir / "page.html"
        page.write_bytes(render_file_text(text))
        uri = page.as_uri()
        try:
            self.driver.get(uri)
            href, inner, *parts = self.driver.execute_script(INNER_TEXT_JS)
        except TimeoutException:
            self.stop()
            return "timeout", "", {}
        except Exception as exc:  # noqa: BLE001 - any browser failure is this page's, counted by its reason
            self.stop()
            return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}", "", {}
        finally:
            page.unlink(missing_ok=True)
        if href != uri:
            self.stop()
            return "navigated", "", {}
        return "ok", inner or "", dict(zip(PARTS, parts, strict=True))


# ----------------------------------------------------------------------------------------- causes
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


# ----------------------------------------------------------------------------------------- one page
def short(line: str, n: int = SHORT) -> str:
    return line if len(line) <= n else line[: n - 1] + "…"


def measure_page(rec: dict[str, Any], root: Path, renderer: Renderer | None, cache: RenderCache) -> dict[str, Any]:
    """Render (or read the cache), segment and score one page."""
    key = f"{rec['dataset']}/{rec['id']}"
    out: dict[str, Any] = {"dataset": rec["dataset"], "id": rec["id"], "lang": rec.get("lang")}
    try:
        data = read_bytes(root / rec["dataset"] / rec["html"])
        decoded = to_text(data)  # read_bytes has gunzipped the file
    except (InputError, OSError) as exc:
        out["status"] = f"input error: {type(exc).__name__}"
        return out
    text = decoded.text
    digest = hashlib.sha1((RENDER_VERSION + "\0" + text).encode("utf-8", errors="surrogatepass")).hexdigest()
    cached = cache.get(key, digest)
    out["cached"] = cached is not None
    if cached is None:
        if renderer is None:
            out["status"] = "not rendered (--no-render)"
            return out
        t0 = time.perf_counter()
        status, inner, parts = renderer.render(text)
        cached = {"key": key, "hash": digest, "status": status, "text": inner, "parts": parts,
                  "seconds": round(time.perf_counter() - t0, 3)}
        cache.put(cached)
    out["status"] = cached["status"]
    out["render_s"] = cached.get("seconds")
    if cached["status"] != "ok":
        return out
    lines = rendered_lines(cached["text"])
    t0 = time.perf_counter()
    try:
        doc, tree = segment_tree(data)
    except InputError as exc:
        out["status"] = f"segment error: {type(exc).__name__}"
        return out
    score = line_score(lines, [b.text for b in doc.blocks])
    out["segment_s"] = round(time.perf_counter() - t0, 3)
    out["blocks"] = len(doc.blocks)
    out["encoding"] = decoded.encoding
    missing = score.pop("missing")
    out.update(score)
    part_keys = {p: {squash(x) for t in cached.get("parts", {}).get(p, []) for x in rendered_lines(t)} for p in PARTS}
    parts = [part_of(squash(m), part_keys) for m in missing]
    out["missing_in"] = {p: parts.count(p) for p in PARTS}
    if part_keys["select"]:  # the share without the lines of <select> options, found or missing
        missing_part = {squash(m): p for m, p in zip(missing, parts, strict=True)}

        def keep(key: str) -> bool:
            return (missing_part[key] if key in missing_part else part_of(key, part_keys, True)) != "select"

        rest = [line for line in lines if keep(squash(line))]
        out["share_no_select"] = line_score(rest, [b.text for b in doc.blocks])["line_share"]
    else:
        out["share_no_select"] = score["line_share"]
    if not score["lines"]:
        low_text = text.lower()
        out["empty_reason"] = ("an unclosed <title> holds the rest of the page (we close it)"
                               if "<title" in low_text and "</title" not in low_text
                               else "nothing shown by either" if not doc.blocks else "hidden by the page's CSS?")
    low = [x for x in (score["line_share"], out["share_no_select"]) if x is not None and x < THRESHOLD]
    if low:
        h_tree = html5_tree(text)
        out.update(classify(text, len(doc.blocks), tree, h_tree, missing, parts))
        out.update({f"{k}_share": v for k, v in other_parser_shares(text, h_tree, lines).items()})
        first = [m for m, p in zip(missing, parts, strict=True) if p != "select"] or missing
        out["missing_examples"] = [short(m) for m in first[:EXAMPLES]]
        out["missing_lines"] = len(missing)
    return out


# ----------------------------------------------------------------------------------------- report
def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r.get("line_share") is not None]
    shares = [r["line_share"] for r in scored]
    chars = sum(r["chars"] for r in scored)
    return {
        "pages": len(rows),
        "rendered": sum(1 for r in rows if r.get("status") == "ok"),
        "scored": len(scored),
        "empty_render": sum(1 for r in rows if r.get("status") == "ok" and not r.get("lines")),
        "mean_line_share": statistics.fmean(shares) if shares else None,
        "median_line_share": statistics.median(shares) if shares else None,
        "mean_char_share": statistics.fmean(r["char_share"] for r in scored) if scored else None,
        "pooled_char_share": sum(r["found_chars"] for r in scored) / chars if chars else None,
        "mean_share_no_select": statistics.fmean(r["share_no_select"] for r in scored) if scored else None,
        "under": sum(1 for s in shares if s < THRESHOLD),
        "under_no_select": sum(1 for r in scored if (r.get("share_no_select") or 0) < THRESHOLD),
        "missing_lines": sum(r["lines"] - r["found"] for r in scored),
        **{f"missing_in_{p}": sum(r["missing_in"][p] for r in scored) for p in PARTS},
        "zero_blocks": sum(1 for r in scored if r["blocks"] == 0),
    }


def _cause_label(r: dict[str, Any], field: str = "main_cause") -> str:
    return "; ".join([*r.get("flags", []), r.get(field, "")]).strip("; ")


def _cause_tables(pages: list[dict[str, Any]], field: str, title: str) -> list[str]:
    """Three tables over a list of pages: pages by main cause, by page flag, missing lines by line cause."""
    flag_pages: Counter[str] = Counter()
    main_pages: Counter[str] = Counter()
    line_totals: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for r in pages:
        key = f"{r['dataset']}/{r['id']}"
        for f in r.get("flags", []):
            flag_pages[f] += 1
            examples.setdefault(f, []).append(key)
        main_pages[r[field]] += 1
        examples.setdefault(r[field], []).append(key)
        line_totals.update({c: n for c, n in r.get("line_causes", {}).items() if field == "main_cause" or c != SELECT})
    md = [f"### {title[0].upper()}{title[1:]}", "", "| main cause of the page | pages | examples |", "|---|---|---|"]
    md += [f"| {c} | {n} | {', '.join(examples[c][:3])} |" for c, n in main_pages.most_common()]
    if flag_pages:
        md += ["", "| page flag | pages | examples |", "|---|---|---|"]
        md += [f"| {c} | {n} | {', '.join(examples[c][:3])} |" for c, n in flag_pages.most_common()]
    md += ["", "| line cause | missing lines on these pages |", "|---|---|"]
    md += [f"| {c} | {n} |" for c, n in line_totals.most_common()]
    return [*md, ""]


def _page_row(r: dict[str, Any], share: float, field: str) -> str:
    key = f"{r['dataset']}/{r['id']}"
    cause = _cause_label(r, field) + (f" — **{NOTES[key]}**" if key in NOTES else "")
    miss = " / ".join(m.replace("|", "\\|") for m in r.get("missing_examples", []))
    return (f"| {key} | {_fmt(share)} | {_fmt(r['line_share'])} | {r['found']} / {r['lines']} | {r['blocks']} "
            f"| {cause} | {_fmt(r.get('html5lib_share'))} | {_fmt(r.get('lexbor_share'))} | {miss} |")


def write_report(rows: list[dict[str, Any]], out: Path, command: str, seconds: float, note: str) -> dict[str, Any]:
    datasets = sorted({r["dataset"] for r in rows})
    summary = {d: summarize([r for r in rows if r["dataset"] == d]) for d in datasets}
    summary["Chinese pages (all datasets)"] = summarize([r for r in rows if r.get("lang") == "zh"])
    summary["non-Chinese pages"] = summarize([r for r in rows if r.get("lang") != "zh"])
    summary["all"] = summarize(rows)
    under = sorted((r for r in rows if r.get("line_share") is not None and r["line_share"] < THRESHOLD),
                   key=lambda r: (r["line_share"], -r["lines"]))
    under_ns = sorted((r for r in rows if r.get("share_no_select") is not None and r["share_no_select"] < THRESHOLD),
                      key=lambda r: (r["share_no_select"], -r["lines"]))
    failures = Counter(r["status"] for r in rows if r.get("status") != "ok")
    empty = [r for r in rows if r.get("status") == "ok" and not r.get("lines")]
    rendered = [r for r in rows if r.get("render_s") is not None]
    md = [
        "# DOM fidelity: do our blocks hold what Chromium displays?",
        "",
        f"`{command}`",
        "",
        f"Run on {dt.date.today().isoformat()}: {len(rows)} pages ({summary['Chinese pages (all datasets)']['pages']} "
        f"Chinese, {summary['non-Chinese pages']['pages']} others), {seconds / 60:.1f} minutes "
        f"(renders read from the cache where the decoded text was already rendered). {note}".rstrip(),
        "",
        "What is compared: the page's bytes decoded once, as the extractor decodes them",
        "(`bodyblocks.page.decode.to_text`);",
        "Chromium gets that same text as UTF-8 behind a byte-order mark, so charset detection is not measured (a BOM",
        "rather than a leading `<meta charset>`, which would put a tag before `<!doctype>` and switch Chromium to",
        "quirks mode). Headless Chromium, JavaScript off (so `<noscript>` is displayed), images off, every request",
        "refused (the page's external stylesheets never load; inline `<style>` applies), `<meta http-equiv=refresh>`",
        "renamed. A rendered line is a non-empty line of `document.body.innerText` with a letter, digit or CJK",
        "character; it is *found* when its white-space-free, case-folded form is in our blocks",
        "(`bodyblocks.page.segment.segment`) joined. Only rendered lines missing from our blocks count, never text",
        "we keep",
        "that Chromium hides. *char share* weights lines by length (mean over pages; *pooled*: over all characters).",
        "Without the page's stylesheets, text they would hide (screen-reader-only labels, collapsed menus) is",
        "displayed and counted; `<select>` elements count every option (innerText lists them all), hence the",
        "columns without them.",
        "",
        "| dataset | pages | rendered | empty render | mean line share | median | char share | pooled chars "
        f"| pages < {THRESHOLD} | 0 blocks, text shown | without `<select>` options: mean share "
        f"| pages < {THRESHOLD} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        label = f"**{name}**" if name == "all" else name
        md.append(
            f"| {label} | {s['pages']} | {s['rendered']} | {s['empty_render']} | {_fmt(s['mean_line_share'])} "
            f"| {_fmt(s['median_line_share'])} | {_fmt(s['mean_char_share'])} | {_fmt(s['pooled_char_share'])} "
            f"| {s['under']} | {s['zero_blocks']} | {_fmt(s['mean_share_no_select'])} | {s['under_no_select']} |"
        )
    a = summary["all"]
    md += ["", f"Rendered lines missing from our blocks, all pages: {a['missing_lines']}, of which inside a `<select>` "
           f"(innerText lists every option; the closed control shows one) {a['missing_in_select']}, inside a "
           f"`<button>` {a['missing_in_button']}, inside a `<noscript>` {a['missing_in_noscript']} (from Chromium's "
           "own innerText of those elements)."]
    md += ["", "Pages not rendered or not scored, by reason: " +
           (", ".join(f"{k}: {v}" for k, v in failures.most_common()) or "none") + "."]
    if rendered:
        secs = [r["render_s"] for r in rendered]
        fresh = sum(1 for r in rows if r.get("cached") is False)
        cached = sum(1 for r in rows if r.get("cached") is True)
        md.append(f"Renders made in this run: {fresh}; read from the cache: {cached}. "
                  f"Chromium's time per page ({len(secs)} renders, from their cache records): mean "
                  f"{statistics.fmean(secs):.2f} s, median {statistics.median(secs):.2f} s, max {max(secs):.1f} s, "
                  f"{sum(secs) / 60:.1f} minutes in all.")
    if empty:
        md += ["", "Pages Chromium shows no text on (not scored: only rendered lines missing from ours count): "
               + ", ".join(f"{r['dataset']}/{r['id']} ({r['blocks']} blocks; {r['empty_reason']})" for r in empty)
               + "."]
    md += [
        "",
        "## Causes",
        "",
        "A missing line that Chromium shows inside a `<noscript>`, `<select>` or `<button>` (the innerText of those",
        "elements, read in the same render, holds it or a part of it) is put down to that element. Each other",
        f"missing line (the first {MAX_CLASSIFIED} of a page) is located in an HTML5 tree (html5lib, scripting off,",
        "as Chromium parses with JavaScript off) and in libxml2's tree, the one our walk reads: *libxml2 lost the",
        "text*, *libxml2 put it inside <X>* (X hidden to our walk and not an ancestor in the HTML5 tree) and",
        "*libxml2 nests it in a hidden element that the HTML5 tree closes before it* are parser divergences. A",
        "page's cause is its page flags plus the line cause holding most of its missing characters. The *html5lib*",
        "and *lexbor* columns give the line share our walk reaches on html5lib's tree and on Lexbor's (selectolax)",
        "tree serialized and segmented again: a parser divergence shows as a higher share there.",
        "",
    ]
    for parser in ("html5lib", "lexbor"):
        both = [r for r in under_ns if r.get(f"{parser}_share") is not None]
        up = [r for r in both if r[f"{parser}_share"] > r["line_share"] + 0.01]
        down = sum(1 for r in both if r[f"{parser}_share"] < r["line_share"] - 0.01)
        md.append(f"Our walk on {parser}'s tree, on the {len(both)} pages under {THRESHOLD} without `<select>` "
                  f"options: a higher line share on {len(up)} ("
                  + (", ".join(f"{r['dataset']}/{r['id']} {r['line_share']:.3f} -> {r[f'{parser}_share']:.3f}"
                               for r in up) or "none")
                  + f"), a lower one on {down}, within 0.01 on the others.")
    md.append("")
    md += _cause_tables(under, "main_cause", f"the {len(under)} pages under {THRESHOLD}")
    md += _cause_tables(under_ns, "main_cause_no_select",
                        f"the {len(under_ns)} pages under {THRESHOLD} once `<select>` options are left out")
    lists = ((f"Pages under {THRESHOLD} once `<select>` options are left out (the worst {HAND_CHECKED} checked "
              "by hand)", under_ns, "main_cause_no_select"), (f"Every page under {THRESHOLD}", under, "main_cause"))
    for title, rows, cause in lists:
        md += ["", f"## {title}", "",
               "| page | share w/o select | share | found / rendered lines | blocks | cause | html5lib | lexbor "
               "| missing (first lines) |",
               "|---|---|---|---|---|---|---|---|---|"]
        md += [_page_row(r, r["share_no_select"], cause) for r in rows]
    write_atomic(out, "\n".join(md) + "\n")
    columns = ("dataset", "id", "lang", "status", "blocks", "lines", "found", "line_share", "char_share",
               "share_no_select", "missing_in_select", "missing_in_button", "missing_in_noscript")
    detail = ("flags", "main_cause", "main_cause_no_select", "line_causes", "html5lib_share", "lexbor_share",
              "missing_lines", "missing_examples", "empty_reason")

    def value(r: dict[str, Any], k: str) -> Any:
        v = r["missing_in"].get(k[11:]) if k.startswith("missing_in_") and "missing_in" in r else r.get(k)
        return round(v, 4) if isinstance(v, float) else v

    listed = [r for r in rows if any(k in r for k in detail)]
    rounded = {n: {k: round(v, 4) if isinstance(v, float) else v for k, v in x.items()} for n, x in summary.items()}
    payload = {"command": command, "date": dt.date.today().isoformat(), "seconds": round(seconds),
               "threshold": THRESHOLD, "summary": rounded, "failures": dict(failures), "columns": columns,
               "pages": [[value(r, k) for k in columns] for r in rows],
               "details": [{"page": f"{r['dataset']}/{r['id']}", **{k: value(r, k) for k in detail if k in r}}
                           for r in listed]}
    text = json.dumps({k: v for k, v in payload.items() if k not in ("pages", "details")}, indent=1,
                      ensure_ascii=False)[:-2]  # the small parts indented, one line per page below
    for name in ("pages", "details"):
        lines = ",\n  ".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in payload[name])
        text += f',\n "{name}": [\n  {lines}\n ]'
    write_atomic(out.with_suffix(".json"), text + "\n}\n")
    return summary


# ----------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    ap = arguments(__doc__, root=True)
    ap.add_argument("--per-dataset", type=int, help="a quick run: this many pages of each dataset, spread over it")
    ap.add_argument("--pages", type=int, default=NON_ZH_PAGES,
                    help=f"non-Chinese pages spread over the datasets, plus every Chinese one (default {NON_ZH_PAGES})")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "runs" / "dom_fidelity" / "report.md",
                    help="the Markdown report, every page listed (its summary is in docs/EVALUATION.md); the "
                         "per-page JSON goes beside it (.json)")
    ap.add_argument("--cache", type=Path, default=CACHE_DIR / "innertext.jsonl")
    ap.add_argument("--timeout", type=float, default=PAGE_TIMEOUT, help="page-load timeout, seconds")
    ap.add_argument("--no-render", action="store_true", help="score cached renders only (no browser)")
    ap.add_argument("--note", default="", help="a sentence added to the report's header")
    args = ap.parse_args(argv)
    need_root(args.root, "benchmarks.dom_fidelity")
    command = "python -m benchmarks.dom_fidelity " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    pages = select_pages(args.root, args.per_dataset, args.pages)
    cache = RenderCache(args.cache)
    renderer = None if args.no_render else Renderer(timeout=args.timeout)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    try:
        for i, rec in enumerate(pages, 1):
            rows.append(measure_page(rec, args.root, renderer, cache))
            if i % 25 == 0 or i == len(pages):
                el = time.perf_counter() - t0
                print(f"{i}/{len(pages)} pages, {el:.0f} s, {i / el:.2f} pages/s", file=sys.stderr, flush=True)
    finally:
        if renderer is not None:
            renderer.close()
    seconds = time.perf_counter() - t0
    summary = write_report(rows, args.out, command.strip(), seconds, args.note)
    s = summary["all"]
    print(f"{s['pages']} pages, {s['rendered']} rendered, mean line share {_fmt(s['mean_line_share'])}, "
          f"{s['under']} under {THRESHOLD}, {s['zero_blocks']} with 0 blocks; {seconds:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
