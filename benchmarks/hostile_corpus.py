"""Hostile inputs to `bodyblocks extract`, run end to end: every page accounted for, with the right reason.

    python -m benchmarks.hostile_corpus                          # the default extractor (the ensemble)
    python -m benchmarks.hostile_corpus --extractor gbt --workers 2
    python -m benchmarks.hostile_corpus --out /tmp/hostile --keep

Builds, in a temporary folder (or --out, which must be empty or absent), an input folder of hostile files
(a gzip bomb that inflates to more than 1 GB, corrupt gzip, binary junk, empty pages, NUL bytes, UTF-16/32,
charsets no page is written in, mislabelled GBK, 100,000-deep nesting, a page over the segmenter's size
limit, 300,000 blocks, broken markup, hostile file names, dangling links, a FIFO, a socket, a folder loop, an
unreadable folder) mixed with ~20 good article pages that each hold a known, numbered sentence, and a dataset
folder (pages.jsonl + html/) whose records try to escape (ids `../escape`, `/abs/path`, `sub/../../x`, html
paths `../../../../etc/passwd`, a link out of the folder), are not JSON or have no id, and a URL list of lines
that are no http(s) URL (`file:///etc/passwd`, a line that is not UTF-8). The input side adds links
out of the input folder (`passwd.html -> /etc/passwd`, `sub/shadow.htm -> /etc/shadow`: never read), a folder
1,100 levels deep, ids of 1,500 segments and of 4,800 bytes, a record of 100,000 nested `[`, and ids that
collide as file and folder (`col`, `col.txt/inner`). Then it runs

    bodyblocks extract IN DATASET URLS --out OUT --no-progress [--extractor NAME] [--workers N]

under GNU time (`/usr/bin/time -v`) with a wall-clock limit and checks report.json against what each input
should become (ok, with its sentence in its output; or failed, with its reason), that nothing was written
outside OUT, that no output lies outside it, the exit status (1: some pages fail), the peak RSS (GNU time's
"Maximum resident set size": the largest single process, workers included, not their sum) against 1.5 GiB
and the slowest page's seconds against the page time limit (--page-timeout; the CLI's default is 60 s).
Every hostile case that is mishandled is printed. Two more scenarios are run again and again with the heuristic
extractor (fast; they are about inputs): --out inside the input folder with --review (the outputs and review
pages must never be read back: 2 pages each run), and a resume after a record with a duplicate id is put before
the old one in pages.jsonl (no page may be "skipped" with its text in no output). The last lines are one verdict
per target, and the exit status is 1 when a target is not met.

Disk: about 20 MB (the bomb is ~1 MB on disk; the 100 MB file is sparse). Run it under `nice` on a shared
machine: the bomb takes a few seconds of CPU to build, the default extractor a few minutes to run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.attacks import all_scenarios
from benchmarks.common import arguments
from bodyblocks.runtime.files import REPO_ROOT

RSS_TARGET_KIB = 1536 * 1024  # 1.5 GiB
BOMB_BYTES = 1100 * 2**20  # what the bomb inflates to (> 1 GB)
SPARSE_BYTES = 100 * 2**20  # a sparse file: no disk, but more than any page may be
WALL_TIMEOUT_S = 900
GNU_TIME = "/usr/bin/time"
CANARY = "CANARY-7f3a91 must never be read"
PASSWD_MARK = re.compile(r"^root:[^:]*:0:0:", re.MULTILINE)
DEEP_LEVELS = 1100  # folders of IN/deep: os.walk, shutil.rmtree and os.makedirs recurse once a level

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


# ------------------------------------------------------------------------------------------ page content
def sentence(tag: str) -> str:
    return (f"Relief convoys reached the valley on Tuesday, dispatch {tag} said, after three days of rain had "
            "closed the mountain roads.")


PARAGRAPHS = [
    "Residents had waited on the ridge for supplies since the old stone bridge collapsed last week, and the first "
    "trucks carried drinking water, rice, blankets and medicine for the clinic in the lower village.",
    "Engineers from the provincial roads office said a temporary crossing would be built upstream within a month, "
    "provided the river kept falling at its present rate and the weather stayed dry through the weekend.",
    "Teachers reopened the primary school in the church hall on Wednesday morning, and the market square, where "
    "farmers had sold what little survived the flood, was cleared of mud by volunteers from the nearby towns.",
    "Officials warned that landslides remained a danger on the northern slopes, where the soil was still soaked, "
    "and asked drivers to keep to the marked route and to travel only in daylight until further notice.",
]
CHINESE = [
    "救援车队周二抵达山谷，此前连续三天的降雨冲毁了山路，官员表示道路已经重新开放。",
    "自从上周大桥倒塌以来，居民们一直在山脊上等待物资，第一批卡车运来了饮用水、大米、毛毯和药品。",
    "工程师说，如果河水继续下降，天气保持干燥，一个月内将在上游修建一座临时桥梁，帮助村民出行。",
    "当地政府表示，未来一周还将有更多车队进入灾区，帮助恢复电力和通信，学校也将在下周重新开课。",
]


def article(tag: str, head: str = "", charset: str | None = "utf-8", extra: str = "", first: str | None = None,
            body_only: bool = False) -> str:
    """A real-looking news page: navigation, the article (its first paragraph `first`, by default the numbered
    sentence), a sidebar and a footer."""
    meta = f'<meta charset="{charset}">' if charset else ""
    paras = "".join(f"<p>{p}</p>" for p in PARAGRAPHS)
    story = (f"<article><h1>Relief convoys reach the flooded valley</h1><p class='byline'>By Maria Ortega, "
             f"valley correspondent</p><p>{first or sentence(tag)}</p>{paras}{extra}</article>")
    nav = ("<header><nav><a href='/'>Home</a> <a href='/world'>World</a> <a href='/region'>Region</a> "
           "<a href='/sport'>Sport</a> <a href='/weather'>Weather</a></nav></header>")
    aside = ("<aside><h3>Most read</h3><ul><li><a href='/a'>Council approves the new budget</a></li>"
             "<li><a href='/b'>Late goal sinks the visitors</a></li><li><a href='/c'>Five recipes for "
             "autumn</a></li></ul></aside>")
    foot = ("<footer><p>&copy; 2024 The Valley Courier. All rights reserved.</p><a href='/privacy'>Privacy</a> "
            "<a href='/terms'>Terms</a></footer>")
    body = f"<body>{nav}<main>{story}{aside}</main>{foot}</body>"
    if body_only:
        return body
    return (f"<!DOCTYPE html>\n<html lang='en'><head>{meta}<title>Relief convoys reach the valley | The Valley "
            f"Courier</title>{head}</head>{body}</html>\n")


def chinese_article(charset: str | None) -> str:
    meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">' if charset else ""
    paras = "".join(f"<p>{p}</p>" for p in CHINESE)
    return (f"<!DOCTYPE html><html><head>{meta}<title>救援车队抵达山谷</title></head><body><div class='nav'>"
            "<a href='/'>首页</a> <a href='/news'>新闻</a> <a href='/sport'>体育</a></div><div class='content'>"
            f"<h1>救援车队抵达山谷</h1>{paras}</div><div class='foot'>版权所有 山谷日报</div></body></html>")


# ------------------------------------------------------------------------------------------ checks
def norm(text: str) -> str:
    return " ".join(text.split())


def printable(path: str) -> str:
    """A path as the report prints it: undecodable bytes of a file name become U+FFFD."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return path.encode("utf-8", "replace").decode("utf-8")


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


# ------------------------------------------------------------------------------------------ the corpus
class Corpus:
    """The inputs, written under ROOT: ROOT/in (folder), ROOT/dataset (a dataset folder), ROOT/canary.html."""

    def __init__(self, root: Path) -> None:
        self.root, self.src, self.ds = root, root / "in", root / "dataset"
        self.urls = root / "urls.txt"  # a URL list: no line of it may be captured
        self.cases: list[Case] = []
        self.restore: list[tuple[bytes, int]] = []  # chmod'ed paths and the mode to give back
        self.rng = random.Random(0)
        self.records: list[str] = []

    def path(self, rel: str | bytes) -> bytes:
        return os.path.join(os.fsencode(self.src), rel if isinstance(rel, bytes) else os.fsencode(rel))

    def add(self, name: str, rel: str | bytes, data: bytes | str | None, expect: str | tuple[str, ...],
            sentence: str | None = None, checks: list[tuple[str, Check]] | None = None, good: bool = False,
            note: str = "") -> bytes:
        """Write ROOT/in/REL (unless `data` is None: made by the caller) and expect it to be accounted so."""
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if data is not None:
            with open(p, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        expect = (expect,) if isinstance(expect, str) else expect
        self.cases.append(Case(name, expect, path=printable(os.fsdecode(p)), sentence=sentence,
                               checks=checks or [], good=good, note=note))
        return p

    def page(self, name: str, rel: str | bytes, tag: str, good: bool = False, **kw: Any) -> None:
        """An article page whose sentence must come out, whatever is hostile about where it is."""
        self.add(name, rel, article(tag, **kw), "ok", sentence(tag), good=good)

    # ------------------------------------------------------------------------- the folder
    def build(self) -> None:
        self.src.mkdir(parents=True)
        (self.root / "canary.html").write_text(article("CANARY", first=CANARY), encoding="utf-8")
        for n in range(1, 17):
            rel = [f"good/good-{n:02d}.html", f"good/2024/06/good-{n:02d}.htm", f"good/good-{n:02d}.HTML"][n % 3]
            self.page(f"good page {n:02d}", rel, f"{n:02d}", good=True)
        self.gzip_cases()
        self.binary_cases()
        self.encoding_cases()
        self.markup_cases()
        self.name_cases()
        self.entry_cases()
        self.input_cases()
        self.dataset()
        self.url_list()

    def gzip_cases(self) -> None:
        bomb = self.add("gzip bomb (1.1 GB inflated)", "gz/bomb.html.gz", None, "failed:too-large")
        with open(bomb, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
            gz.write(b"<html><body><p>")
            zeros = bytes(2**20)
            for _ in range(BOMB_BYTES // len(zeros)):
                gz.write(zeros)
        packed = Path(os.fsdecode(bomb)).read_bytes()
        self.add("gzip bomb named .html", "gz/bomb-renamed.html", packed, "failed:too-large")
        self.add("gzip bomb inside gzip", "gz/bomb-nested.html.gz", gzip.compress(packed, mtime=0), "failed:too-large")
        good = gzip.compress(article("gz-ok").encode(), mtime=0)
        self.add("gzip page (control)", "gz/plain.html.gz", good, "ok", sentence("gz-ok"))
        self.add("truncated gzip", "gz/truncated.html.gz", good[: len(good) // 2], "failed:corrupt-gzip")
        corrupt = bytearray(good)
        for i in range(20, 60):
            corrupt[i] ^= 0x5A
        self.add("corrupt gzip (flipped bytes)", "gz/corrupt.html.gz", bytes(corrupt), "failed:corrupt-gzip")
        self.add("gzip with a wrong CRC", "gz/bad-crc.html.gz", good[:-8] + b"\0\0\0\0" + good[-4:],
                 "failed:corrupt-gzip")
        self.add("gzip of nothing", "gz/empty.html.gz", gzip.compress(b"", mtime=0), "failed:empty")
        self.add("gzip magic only", "gz/magic-only.html.gz", b"\x1f\x8b", "failed:corrupt-gzip")
        self.add("gzip + trailing garbage", "gz/trailing.html.gz", good + b"garbage after the stream\n" * 4,
                 ("ok", "failed:corrupt-gzip"), sentence("gz-ok"),
                 note="browsers (zlib inflate) show the page; corrupt-gzip is accepted")
        two = gzip.compress(article("gz-m1").encode()[:300], mtime=0) + gzip.compress(
            article("gz-m1").encode()[300:], mtime=0)
        self.add("gzip of two members", "gz/two-members.html.gz", two, "ok", sentence("gz-m1"))
        self.add("gzip of a PNG", "gz/png.html.gz", gzip.compress(b"\x89PNG\r\n\x1a\n" + self.rng.randbytes(2048)),
                 "failed:binary")
        p = self.add("sparse 100 MB file", "big/sparse-100mb.html", None, "failed:too-large")
        with open(p, "wb") as fh:
            fh.truncate(SPARSE_BYTES)

    def binary_cases(self) -> None:
        junk = {"PDF": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PNG": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
                "ZIP": b"PK\x03\x04\x14\0\0\0\x08\0", "ELF": b"\x7fELF\x02\x01\x01\0" + bytes(8),
                "GIF": b"GIF89a\x01\0\x01\0", "JPEG": b"\xff\xd8\xff\xe0\0\x10JFIF\0", "WASM": b"\0asm\x01\0\0\0",
                "random": b""}
        for kind, magic in junk.items():
            self.add(f"binary junk ({kind})", f"junk/{kind.lower()}.html", magic + self.rng.randbytes(4096),
                     "failed:binary")
        self.add("empty file", "junk/empty.html", b"", "failed:empty")
        self.add("whitespace only", "junk/whitespace.html", b" \n\t\r\n   \n" * 50, "failed:empty")
        self.add("UTF-8 BOM only", "junk/bom-only.html", b"\xef\xbb\xbf", ("failed:empty", "ok"),
                 checks=[("no body", no_body)])
        self.add("plain text, no tags", "junk/plain-text.html", sentence("txt") + "\n\n" + "\n\n".join(PARAGRAPHS),
                 "ok", sentence("txt"))

    def encoding_cases(self) -> None:
        nul = article("nul").replace("</p>", "</p>\0", 3).replace("<h1>", "\0\0<h1>")
        self.add("NUL bytes inside HTML", "enc/nul-bytes.html", nul, "ok", sentence("nul"))
        self.add("UTF-16 LE with BOM", "enc/utf16-bom.html", article("u16", charset="utf-16").encode("utf-16"),
                 "ok", sentence("u16"))
        self.add("UTF-16 BE with BOM", "enc/utf16be-bom.html",
                 b"\xfe\xff" + article("u16be", charset="utf-16").encode("utf-16-be"), "ok", sentence("u16be"))
        self.add("UTF-16 LE without BOM", "enc/utf16-nobom.html",
                 article("u16nb", charset="utf-16").encode("utf-16-le"), ("ok", "failed:binary"), sentence("u16nb"),
                 note="browsers do not sniff BOM-less UTF-16 either: binary is accepted")
        self.add("UTF-32 with BOM", "enc/utf32-bom.html", article("u32", charset="utf-32").encode("utf-32"), "ok",
                 sentence("u32"))
        for label in ("punycode", "undefined", "utf-7", "base64", "rot13", "x-no-such-charset", "cp037"):
            extra = "<p>Prices: +ADw-script+AD4-alert(1)+ADw-/script+AD4- caf&eacute; cr&egrave;me</p>"  # ASCII
            self.add(f"charset={label}", f"enc/charset-{label}.html", article(f"cs-{label}", charset=label,
                     extra=extra), "ok", sentence(f"cs-{label}"),
                     checks=[("charset ignored", encoding_not(label.replace("rot13", "rot-13"))),
                             ("é intact", contains("café crème"))])
        accents = ("<p>Z\u00fcrich, K\u00f6ln, S\u00e3o Paulo, Malm\u00f6, Li\u00e8ge, \u00c1vila, Gda\u0144sk and "
                   "T\u00f8nsberg sent crews; the caf\u00e9 owners d\u00e9j\u00e0 vu.</p>")
        bad = article("bad-byte", extra=accents).encode("utf-8").replace(b"Residents", b"Resid\xffents", 1)
        self.add("UTF-8 with one invalid byte", "enc/utf8-bad-byte.html", bad, "ok", sentence("bad-byte"),
                 checks=[("UTF-8 kept", contains("Zürich, Köln, São Paulo"))])
        cut = article("cut", extra=accents).encode("utf-8")
        self.add("UTF-8 cut inside a character", "enc/utf8-cut.html", cut[: cut.rindex("é".encode()) + 1], "ok",
                 sentence("cut"), checks=[("UTF-8 kept", contains("Zürich, Köln, São Paulo"))])
        for name, rel, charset in (("GBK declared UTF-8", "gbk-as-utf8", "utf-8"),
                                   ("GBK undeclared", "gbk-undeclared", None),
                                   ("GBK declared gb2312 (control)", "gbk-gb2312", "gb2312")):
            self.add(name, f"enc/{rel}.html", chinese_article(charset).encode("gbk"), "ok", CHINESE[0],
                     checks=[("read as GB18030", encoding_is("gb18030", "gbk", "gb2312"))])
        self.add("cp1252 declared UTF-8", "enc/cp1252-as-utf8.html", article("cp", extra=accents).encode("cp1252",
                 "replace"), "ok", sentence("cp"), checks=[("cp1252 read", contains("Zürich, Köln, São Paulo"))])
        long_zh = chinese_article("gb2312").replace("</div><div class='foot'>", "".join(
            f"<p>{p}</p>" for p in CHINESE * 12) + "</div><div class='foot'>").encode("gbk")
        broken, at = bytearray(long_zh), len(long_zh) // 2
        for _ in range(12):  # 12 broken bytes in the second half: a lead byte, then no valid trail byte
            at = long_zh.index(b"\xa3\xac", at + 40)  # a full-width comma
            broken[at + 1] = 0x7F
        self.add("gb2312 with 12 broken bytes", "enc/gb2312-broken.html", bytes(broken), "ok", CHINESE[0],
                 checks=[("read as GB18030", encoding_is("gb18030")),
                         ("replacements flagged", lambda line, _t: None if line.get("replaced") else "not flagged")])
        xml = "<?xml version='1.0' encoding='utf-16'?>" + article("xml", charset=None)
        self.add("XML declaration says UTF-16, bytes UTF-8", "enc/xml-utf16.html", xml, "ok", sentence("xml"))

    def markup_cases(self) -> None:
        inner = article("deep", body_only=True)
        self.add("100,000 nested divs", "markup/deep-divs.html", "<html>" + "<div>" * 100_000 + inner
                 + "</div>" * 100_000 + "</html>", "ok", sentence("deep"))
        self.add("20,000 nested tables", "markup/nested-tables.html", "<html><body>" + "<table><tr><td>" * 20_000
                 + article("tables", body_only=True) + "</td></tr></table>" * 20_000 + "</body></html>", "ok",
                 sentence("tables"))
        self.add("50,000 unclosed spans", "markup/unclosed-spans.html", article("spans", extra="<span>" * 50_000),
                 "ok", sentence("spans"))
        filler = "".join(f"<p>Volunteers logged crate {i} at the depot on the ridge road, and the drivers signed for "
                         "water, rice and blankets before the next convoy left at dawn.</p>" for i in range(42_000))
        big = article("big", extra=filler)
        self.add(f"page of {len(big) / 1e6:.1f} M characters", "markup/huge-6m.html", big, "ok", sentence("big"),
                 checks=[("reported truncated", truncated)])
        self.add("300,000 tiny <p>", "markup/many-p.html", article("many-p", extra="".join(
            f"<p>w{i}</p>" for i in range(300_000))), ("failed:too-large", "ok"), sentence("many-p"),
                 note="bodyblocks fails a page of more than 200,000 blocks alone, by design (walk.MAX_BLOCKS)")
        page = article("title")
        self.add("unclosed <title>", "markup/unclosed-title.html", page.replace("</title>", ""), "ok",
                 sentence("title"))
        self.add("<script> before <html>", "markup/script-first.html",
                 "<script>document.cookie='a=1';</script>\n" + article("script"), "ok", sentence("script"))
        head = article("head", body_only=True).replace("<body>", "").replace("</body>", "")
        self.add("content in <head> (unknown element)", "markup/content-in-head.html",
                 f"<html><head><meta charset='utf-8'><title>Relief</title><story-box>{head}</story-box></head>"
                 "<body></body></html>", "ok", sentence("head"))
        options = "".join(f"<option value='/s{i}'>Section {i}</option>" for i in range(40))
        self.add("only <select>/<option> navigation", "markup/select-only.html",
                 f"<html><head><title>Jump</title></head><body><form><select name='go'>{options}</select>"
                 "<noscript><input type='submit' value='Go'></noscript></form></body></html>", "ok",
                 checks=[("no body", no_body)])
        self.add("unclosed comment", "markup/unclosed-comment.html", article("comment").replace(
            "<aside>", "<!-- <aside>"), "ok", sentence("comment"))
        self.add("unclosed <script>", "markup/unclosed-script.html", article("open-script").replace(
            "<aside>", "<script>var later = '<p>hidden</p>';"), "ok", sentence("open-script"))
        self.add("1 MB attribute", "markup/huge-attribute.html",
                 article("attr").replace("<main>", "<main data-x='" + "A" * 2**20 + "'>"), "ok", sentence("attr"))
        attrs = " ".join(f"a{i}='v'" for i in range(10_000))
        self.add("10,000 attributes", "markup/many-attributes.html", article("attrs").replace(
            "<main>", f"<main {attrs}>"), "ok", sentence("attrs"))
        laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10 if i else "lol"}">' for i in range(10))
        self.add("entity expansion (billion laughs)", "markup/laughs.html",
                 f"<!DOCTYPE html [{laughs}]>" + article("laughs").replace("<aside>", "<p>&l9;</p><aside>"), "ok",
                 sentence("laughs"))
        self.add("invalid character references", "markup/bad-refs.html", article("refs", extra=(
            "<p>nul &#0; surrogate &#xD800; too big &#x110000; control &#x80; &#xFFFE; &bogus;</p>")), "ok",
                 sentence("refs"))

    def name_cases(self) -> None:
        try:  # Linux allows 255 bytes a name (NAME_MAX): 300 characters is more than file systems take
            long = self.add("300-character file name", "names/" + "n" * 295 + ".html", article("long300"), "ok",
                            sentence("long300"))
        except OSError:
            long = self.add("255-byte file name (300 is over NAME_MAX)", "names/" + "n" * 250 + ".html",
                            article("long255"), "ok", sentence("long255"))
        deep = os.path.join(os.path.dirname(long), *([b"d" * 100] * 3), b"page.html")
        self.add("300+ character relative path", os.path.relpath(deep, os.fsencode(self.src)), article("longpath"),
                 "ok", sentence("longpath"))
        self.page("80 CJK characters (240 bytes) in a name", "names/" + "页" * 80 + ".html", "cjk-name")
        self.page("file name with a non-UTF-8 byte", b"names/caf\xe9.html", "latin1-name")
        self.page("newline in a file name", "names/new\nline.html", "newline")
        self.page("file named ..html", "names/..html", "dotdot")
        self.page("file named .html", "names/.html", "dotonly")
        self.page("backslash in a name (a\\b.html)", "names/a\\b.html", "backslash")
        self.page("a/b.html beside a\\b.html", "names/a/b.html", "slash")
        self.page("file named report.html", "names/report.html", "report")
        self.page("file named report.pages.html", "names/report.pages.html", "report-pages")
        self.page("Page.html beside page.html", "names/Page.html", "upper")
        self.page("page.html beside Page.html", "names/page.html", "lower")
        self.page("x.html beside x.htm", "collide/x.html", "x-html")
        self.page("x.htm beside x.html", "collide/x.htm", "x-htm")
        self.page("folder named folder.html: its page", "folder.html/inner.html", "in-folder")

    def entry_cases(self) -> None:
        p = self.add("dangling symlink x.html", "dangling/x.html", None, "failed:not-found")
        os.symlink(self.path("dangling/nowhere.html"), p)
        p = self.add("FIFO pipe.html", "special/pipe.html", None, "failed:not-a-file")
        os.mkfifo(p)
        p = self.add("socket sock.html", "special/sock.html", None, "failed:not-a-file")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.bind(os.fsdecode(p))
        except OSError as exc:  # a socket path must be under 108 bytes
            self.cases.pop()
            print(f"(no socket case: {exc})", file=sys.stderr)
        p = self.add("symlink to /dev/zero", "special/zero.html", None,
                     ("failed:outside-input", "failed:not-a-file", "failed:too-large"))
        os.symlink("/dev/zero", p)
        self.page("page beside a folder symlink loop", "loop/page.html", "loop")
        os.symlink("..", self.path("loop/back"))  # in/loop/back -> in/: a walk that follows it never ends
        self.cases.append(Case("folder symlink loop (loop/back -> ..)", ("absent",), under=True,
                               path=printable(os.fsdecode(self.path("loop/back")))))
        p = self.add("folder symlink named self.html", "loop/self.html", None, ("absent", "failed:not-a-file"))
        os.symlink(".", p)
        root = os.geteuid() == 0
        note = "run as root: root reads a chmod 0 folder, so this is no test of it" if root else ""
        page = self.path("locked/page.html")
        os.makedirs(os.path.dirname(page))
        Path(os.fsdecode(page)).write_text(article("locked"), encoding="utf-8")
        if root:
            self.add("page in an unreadable folder (chmod 0)", "locked/page.html", None, "ok", sentence("locked"),
                     note=note)
        else:
            self.add("unreadable folder (chmod 0)", "locked", None, "failed:unreadable")
        os.chmod(os.path.dirname(page), 0)
        self.restore.append((os.path.dirname(page), 0o755))
        p = self.add("unreadable file (chmod 0)", "special/unreadable.html", article("unreadable"),
                     "ok" if root else ("failed:unreadable", "failed:error"),
                     sentence("unreadable") if root else None, note=note)
        os.chmod(p, 0)
        self.restore.append((p, 0o644))

    def input_cases(self) -> None:
        """The input side: links out of the input folder, and a folder deeper than any walk goes."""
        for name, rel, target in (("symlink passwd.html -> /etc/passwd", "links/passwd.html", "/etc/passwd"),
                                  ("symlink sub/shadow.htm -> /etc/shadow", "links/sub/shadow.htm", "/etc/shadow"),
                                  ("symlink to the canary (../../canary.html)", "links/canary.html",
                                   "../../canary.html")):
            os.symlink(target, self.add(name, rel, None, "failed:outside-input"))
        self.page("target of a link inside the folder", "links/target.html", "link-in")
        p = self.add("symlink inside the folder (sub/inside.html -> ../target.html)", "links/sub/inside.html", None,
                     "ok", sentence("link-in"))
        os.symlink("../target.html", p)
        self.page("page on top of a folder 1,100 levels deep", "deep/page.html", "deep-top")
        mid = self.add("page 50 levels down", "deep/" + "d/" * 50 + "page.html", article("deep-50"), "ok",
                       sentence("deep-50"))
        deep_chain(os.path.dirname(mid), DEEP_LEVELS - 50, {DEEP_LEVELS - 50: article("deep-bottom").encode()})
        # the walk stops MAX_WALK_DEPTH (100) folders below IN: the folder there fails as too-deep, and nothing
        # under it may be reported (a line under it would be counted twice)
        self.cases.append(Case("folder past the walk's depth (100 below IN)", ("failed:too-deep",), under=True,
                               path=printable(os.fsdecode(self.path("deep/" + "d/" * 99 + "d")))))

    def url_list(self) -> None:
        """A URL list whose every line is no http(s) URL: each fails as bad-url, none is captured."""
        lines = [b"file:///etc/passwd", b"file:///proc/self/environ", b"file:///some/dir/", b"ftp://example.org/f",
                 b"http://example.org/caf\xe9",  # a byte that is not UTF-8: that line fails, the list runs
                 b"javascript:alert(document.domain)"]
        self.urls.write_bytes(b"# local files and other schemes\n" + b"\n".join(lines) + b"\n")
        for line in lines:
            url = line.decode("utf-8", "replace")
            self.cases.append(Case(f"URL list line {clip(url, 30)}", ("failed:bad-url",), path=url))

    # ------------------------------------------------------------------------- the dataset folder
    def record(self, name: str, rec: dict[str, Any] | str, expect: str | tuple[str, ...], page: str | None = None,
               sentence_: str | None = None, rec_id: str | None = None, checks: list[tuple[str, Check]] | None = None,
               good: bool = False) -> None:
        """A pages.jsonl line; `page`: its html file's HTML (written gzipped to the record's html path)."""
        self.records.append(rec if isinstance(rec, str) else json.dumps(rec))
        html = rec.get("html") if isinstance(rec, dict) else None
        if page is not None and isinstance(html, str):
            (self.ds / html).write_bytes(gzip.compress(page.encode("utf-8"), mtime=0))
        path = str(self.ds / html) if page is not None and isinstance(html, str) else None
        expect = (expect,) if isinstance(expect, str) else expect
        line_no = None if path or rec_id else len(self.records)
        self.cases.append(Case(name, expect, path=path, rec_id=rec_id, line_no=line_no, sentence=sentence_,
                               checks=checks or [], good=good))

    def dataset(self) -> None:
        (self.ds / "html").mkdir(parents=True)
        for n in range(17, 21):
            tag = f"{n:02d}"
            self.record(f"good page {tag} (dataset)", {"id": f"site-{tag}", "url": f"https://example.org/{tag}",
                        "html": f"html/good-{tag}.html.gz"}, "ok", article(tag), sentence(tag), good=True)
        for name, raw, html in (("id ../escape", "../escape", "escape"), ("id /abs/path", "/abs/path", "abs"),
                                ("id sub/../../x", "sub/../../x", "subx"), ("id ..\\..\\win", "..\\..\\win", "win"),
                                ("id with NUL and 300 chars", "n\0ul" + "x" * 300, "nul-id")):
            self.record(name, {"id": raw, "html": f"html/{html}.html.gz"}, "ok", article(f"ds-{html}"),
                        sentence(f"ds-{html}"), checks=[("id stays inside", id_inside)])
        self.record("html ../../../../etc/passwd", {"id": "passwd", "html": "../../../../etc/passwd"},
                    "failed:outside-dataset", rec_id="passwd")
        self.record("html ../canary.html", {"id": "canary", "html": "../canary.html"}, "failed:outside-dataset",
                    rec_id="canary")
        self.record("html = absolute path of the canary", {"id": "canary-abs", "html": str(self.root / "canary.html")},
                    "failed:outside-dataset", rec_id="canary-abs")
        os.symlink("../../canary.html", self.ds / "html" / "link.html")
        self.record("html is a symlink out of the dataset", {"id": "link-out", "html": "html/link.html"},
                    "failed:outside-dataset", rec_id="link-out")
        self.record("record that is not JSON", "{not json", "failed:bad-record")
        self.record("record without id", {"html": "html/good-17.html.gz"}, "failed:bad-record")
        self.record("record without html", {"id": "no-html"}, "failed:bad-record", rec_id="no-html")
        self.record("record whose html is missing", {"id": "missing", "html": "html/missing.html.gz"},
                    ("failed:not-found", "failed:error"), rec_id="missing")
        self.record("record that is a JSON list", "[1, 2, 3]", "failed:bad-record")
        self.record("id of 1,500 path segments", {"id": "/".join(["s"] * 1500), "html": "html/deep-id.html.gz"}, "ok",
                    article("deep-id"), sentence("deep-id"), checks=[("id stays inside", id_inside)])
        self.record("id whose output path is over 4,096 bytes", {"id": "/".join(["x" * 119] * 40),
                    "html": "html/long-id.html.gz"}, "ok", article("long-id"), sentence("long-id"))
        self.record("record of 100,000 nested [", "[" * 100_000, "failed:bad-record")
        self.record("id col", {"id": "col", "html": "html/col.html.gz"}, "ok", article("col"), sentence("col"))
        self.record("id col.txt/inner (a folder named like col's output)", {"id": "col.txt/inner",
                    "html": "html/col-inner.html.gz"}, "ok", article("col-inner"), sentence("col-inner"))
        (self.ds / "pages.jsonl").write_text("\n".join(self.records) + "\n", encoding="utf-8")

    def unlock(self) -> None:
        for p, mode in self.restore:
            try:
                os.chmod(p, mode)
            except OSError:
                pass


# ------------------------------------------------------------------------------------------ the run
def deep_chain(top: bytes | str | Path, levels: int, pages: dict[int, bytes]) -> None:
    """TOP/d/d/.../d, LEVELS folders, and `pages[level]` as page.html in the folder of that level (0: TOP, LEVELS:
    the bottom): made through folder descriptors, so that no path is ever that long and nothing recurses."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for level in range(levels + 1):
            if level in pages:
                out = os.open("page.html", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(out, pages[level])
                os.close(out)
            if level < levels:
                os.mkdir("d", dir_fd=fd)
                fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
                os.close(old)
    finally:
        os.close(fd)


def remove_deep(folder: Path) -> None:
    """Remove a folder however deep, without recursion (shutil.rmtree recurses once a level)."""
    stack = [os.fsencode(folder)]
    while stack:
        subs = [e.path for e in os.scandir(stack[-1]) if e.is_dir(follow_symlinks=False)]
        if subs:
            stack.extend(subs)
            continue
        for e in os.scandir(stack[-1]):
            os.unlink(e.path)
        os.rmdir(stack.pop())


def entries(root: Path, skip: Path | None = None) -> list[tuple[bytes, os.stat_result]]:
    """Every entry under ROOT but SKIP, by path (bytes: names need not be UTF-8), with its lstat; walked with a
    stack (os.walk recurses once a level: IN/deep is deeper than Python's recursion limit)."""
    found = []
    stack, bskip = [os.fsencode(root)], os.fsencode(skip) if skip is not None else None
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                items = list(listing)
        except OSError:  # an unreadable folder
            continue
        for e in items:
            if e.path == bskip:
                continue
            st = os.lstat(e.path)
            found.append((e.path, st))
            if stat.S_ISDIR(st.st_mode):
                stack.append(e.path)
    return found


def snapshot(root: Path, skip: Path) -> dict[bytes, tuple[int, int, int]]:
    """Every entry under ROOT but SKIP: (type, size, mtime) by relative path (bytes: names need not be UTF-8)."""
    broot = os.fsencode(root)
    return {os.path.relpath(p, broot): (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
            for p, st in entries(root, skip)}


@dataclass
class RunResult:
    cmd: list[str]
    status: int | None  # None: killed at the wall-clock limit
    stderr: str
    wall_s: float
    rss_kib: int | None


def run_cli(inputs: list[Path], out: Path, args: argparse.Namespace, timefile: Path) -> RunResult:
    cli = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--page-timeout", str(args.page_timeout)]
    if args.extractor:
        cli += ["--extractor", args.extractor]
    if args.workers is not None:
        cli += ["--workers", str(args.workers)]
    gnu = os.access(GNU_TIME, os.X_OK)
    cmd = [GNU_TIME, "-v", "-o", str(timefile), *cli] if gnu else cli
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    try:
        _, err = proc.communicate(timeout=args.timeout)
        status: int | None = proc.returncode
    except subprocess.TimeoutExpired:  # SIGTERM first: the run stops with an "interrupted" report.json
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        status = None
    wall = time.perf_counter() - start
    rss = None
    if gnu and timefile.exists():
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", timefile.read_text(errors="replace"))
        rss = int(m.group(1)) if m else None
    return RunResult(cmd, status, err, wall, rss)


# ------------------------------------------------------------------------------------------ the checks
def outcome(line: dict[str, Any]) -> str:
    if line.get("status") == "ok":
        return "ok"
    return f"{line.get('status')}:{str(line.get('error') or '').split(':', 1)[0]}"


def accepted(got: str, expect: tuple[str, ...]) -> str | None:
    """The expected outcome `got` matches, or None."""
    for e in expect:
        if e == got or (e == "failed:*" and got.startswith("failed:")):
            return e
    return None


def match(cases: list[Case], lines: list[dict[str, Any]]) -> tuple[dict[int, list[dict[str, Any]]], list[dict]]:
    """The report lines of each case (by index): by input path, else by id, else by the pages.jsonl line number
    in the error; and the lines no case claims."""
    by_input = {os.path.normpath(c.path): i for i, c in enumerate(cases) if c.path}
    under = [(os.path.normpath(c.path) + os.sep, i) for i, c in enumerate(cases) if c.path and c.under]
    by_id = {c.rec_id: i for i, c in enumerate(cases) if c.rec_id}
    by_line = {c.line_no: i for i, c in enumerate(cases) if c.line_no}
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(cases))}
    stray = []
    for line in lines:
        source = os.path.normpath(line["input"]) if line.get("input") else None
        m = re.search(r"pages\.jsonl line (\d+)", str(line.get("error") or ""))
        inside = [i for prefix, i in under if source and source.startswith(prefix)]
        if source in by_input:
            found[by_input[source]].append(line)
        elif inside:
            found[inside[0]].append(line)
        elif line.get("id") in by_id:
            found[by_id[line["id"]]].append(line)
        elif m and int(m.group(1)) in by_line and not source:
            found[by_line[int(m.group(1))]].append(line)
        else:
            stray.append(line)
    return found, stray


def read_output(out: Path, line: dict[str, Any]) -> tuple[str | None, str | None]:
    """The page's output text, and a problem with where it lies or what it holds."""
    target = line.get("output")
    if not target:
        return None, "ok without an output file"
    path = Path(target)
    if not path.resolve().is_relative_to(out.resolve()):
        return None, f"output outside --out: {target}"
    try:
        return path.read_bytes().decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"output is not valid UTF-8 ({exc})"
    except OSError as exc:
        return None, f"output unreadable: {exc}"


def judge(case: Case, lines: list[dict[str, Any]], out: Path) -> tuple[str, str, list[str]]:
    """(what the report says, verdict, problems) for one case."""
    if not lines:
        if not case.must_report:
            return "absent", "as expected" if case.expect[0] == "absent" else "as expected (alt)", []
        return "MISSING", "MISHANDLED", ["not in report.json: the page was lost"]
    if case.expect == ("absent",):
        return f"{len(lines)} lines", "MISHANDLED", [f"walked into: {line.get('input')}" for line in lines[:3]]
    problems = [f"accounted {len(lines)} times"] if len(lines) > 1 else []
    line = lines[0]
    got = outcome(line)
    said = got if got != "ok" else f"ok {line.get('chars')} chars {line.get('encoding')}"
    hit = accepted(got, case.expect)
    if hit is None:
        detail = f": {line.get('error')}" if line.get("error") else ""
        problems.append(f"expected {' or '.join(case.expect)}, got {got}{detail}")
    if got == "ok":
        text, problem = read_output(out, line)
        if problem:
            problems.append(problem)
        if case.sentence and text is not None and norm(case.sentence) not in norm(text):
            problems.append("its known sentence is not in its output")
        for label, check in case.checks:
            issue = check(line, text)
            if issue:
                problems.append(f"{label}: {issue}")
    verdict = "MISHANDLED" if problems else "as expected" if hit == case.expect[0] else "as expected (alt)"
    return said, verdict, problems


def clip(text: str, width: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def report_table(cases: list[Case], found: dict[int, list[dict[str, Any]]], out: Path) -> dict[str, Any]:
    rows = []
    for i, c in enumerate(cases):
        said, verdict, problems = judge(c, found[i], out)
        rows.append((c, said, verdict, problems, found[i][0] if found[i] else None))
    print(f"\n{'#':>3} {'input':46} {'expected':34} {'report.json says':34} {'s':>7}  verdict")
    for n, (c, said, verdict, _, line) in enumerate(rows, 1):
        secs = f"{line.get('seconds', 0):.2f}" if line else ""
        print(f"{n:3d} {clip(c.name, 46):46} {clip(' | '.join(c.expect), 34):34} {clip(said, 34):34} {secs:>7}  "
              f"{verdict}")
    bad = [(c, p) for c, _, v, p, _ in rows if v == "MISHANDLED"]
    if bad:
        print(f"\nMISHANDLED ({len(bad)}):")
        for c, problems in bad:
            print(f"  - {c.name} [{clip(c.path or c.rec_id or f'pages.jsonl line {c.line_no}', 200)}]")
            for p in problems:
                print(f"      {p}")
    notes = [(c, verdict) for c, _, verdict, _, _ in rows if c.note]
    if notes:
        print("\nnotes:")
        for c, verdict in notes:
            print(f"  - {c.name}: {c.note} ({verdict})")
    good = [r for r in rows if r[0].good]
    return {"bad": bad, "good_ok": sum(r[2] != "MISHANDLED" for r in good), "good": len(good),
            "hostile_ok": sum(r[2] != "MISHANDLED" for r in rows if not r[0].good),
            "hostile": sum(not r[0].good for r in rows)}


def leaks(out: Path, report_lines: list[dict[str, Any]]) -> list[str]:
    """Outputs outside OUT: report lines naming one, links inside OUT, secrets in any output."""
    problems = []
    for line in report_lines:
        if line.get("output") and not Path(line["output"]).resolve().is_relative_to(out.resolve()):
            problems.append(f"report names an output outside --out: {line['output']}")
    for p in out.rglob("*"):
        if p.is_symlink() or not p.resolve().is_relative_to(out.resolve()):
            problems.append(f"{p} leads outside --out")
        elif p.name.startswith(".") and p.name.endswith(".tmp"):
            problems.append(f"{p}: a temporary file left behind")
        elif p.is_file() and p.suffix in (".txt", ".json", ".md"):
            text = p.read_text(encoding="utf-8", errors="replace")
            if CANARY in text or PASSWD_MARK.search(text):
                problems.append(f"{p} holds a file from outside the inputs (canary or /etc/passwd)")
    return problems


def extract_again(inputs: list[Path], out: Path, *flags: str) -> tuple[dict[str, Any], str]:
    """`bodyblocks extract` with the heuristic extractor (the reruns are about inputs): report.json and stderr."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--extractor", "heuristic", *flags]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace", timeout=300)
    try:
        return json.loads((out / "report.json").read_text(encoding="utf-8")), proc.stderr
    except (OSError, ValueError):
        return {"pages": [], "totals": {}}, proc.stderr


def reruns(root: Path) -> list[tuple[str, bool, str]]:
    """Targets of the scenarios that need more than one run: --out inside the input folder, and a resume after a
    record with a duplicate id is put before the old one. (--out the input folder itself, in every format, is
    benchmarks/attacks/batch.py's.)"""
    src = root / "in"
    src.mkdir(parents=True)
    for tag in ("again-a", "again-b"):
        (src / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    counts, crashed = [], False
    for _ in range(3):  # review pages (out/review/...html) read back as inputs made it 2 -> 5 -> 8
        report, err = extract_again([src], src / "out", "--review", "1")
        counts.append(report.get("totals", {}).get("pages"))
        crashed |= "Traceback" in err
    targets = [("--out inside the input: never read back", counts == [2, 2, 2] and not crashed,
                " -> ".join(map(str, counts)) + " pages" + (", traceback in stderr" if crashed else ""))]

    ds, out = root / "dataset", root / "out-dataset"
    (ds / "html").mkdir(parents=True)
    for tag in ("dup-old", "dup-new", "dup-other"):
        (ds / "html" / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    old, other = {"id": "dup", "html": "html/dup-old.html"}, {"id": "other", "html": "html/dup-other.html"}
    (ds / "pages.jsonl").write_text(f"{json.dumps(old)}\n{json.dumps(other)}\n", encoding="utf-8")
    _, err1 = extract_again([ds], out)
    new = {"id": "dup", "html": "html/dup-new.html"}  # put before the old record with the same id
    (ds / "pages.jsonl").write_text(f"{json.dumps(new)}\n{json.dumps(old)}\n{json.dumps(other)}\n", encoding="utf-8")
    report, err2 = extract_again([ds], out)
    written = " ".join(norm(p.read_text(encoding="utf-8")) for p in out.rglob("*.txt"))
    lost = [tag for tag in ("dup-old", "dup-new", "dup-other") if norm(sentence(tag)) not in written]
    pages = report.get("totals", {}).get("pages")
    crashed = "Traceback" in err1 + err2
    targets.append(("resume after a duplicate id put first: no page lost", not lost and pages == 3 and not crashed,
                     f"{pages} pages, {len(lost)} texts in no output" + (f" ({', '.join(lost)})" if lost else "")
                     + (", traceback in stderr" if crashed else "")))
    return targets


def other_attacks(root: Path) -> list[tuple[str, bool, str]]:
    """Targets of the attacks that are no input of the main run: review links, annotate's writes, tampered
    and malformed checkpoints, Ctrl-C to the process group. Each: nothing outside its own --out written, no
    traceback on stderr."""
    from bodyblocks.annotate.store import AnnotationStore
    from bodyblocks.page.segment import segment

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bodyblocks", *argv], cwd=REPO_ROOT, capture_output=True,
                              text=True, errors="replace", timeout=300)

    targets = []
    ds = root / "review-ds"  # review pages: ids that are links elsewhere, or the index's name
    (ds / "html").mkdir(parents=True)
    ids = ["javascript:alert(document.domain)", "index", "sub/index"]
    for n, _ in enumerate(ids):
        (ds / "html" / f"r{n}.html.gz").write_bytes(gzip.compress(article(f"rv-{n}").encode(), mtime=0))
    (ds / "pages.jsonl").write_text("".join(json.dumps({"id": i, "html": f"html/r{n}.html.gz"}) + "\n"
                                            for n, i in enumerate(ids)), encoding="utf-8")
    before = snapshot(ds, ds / "none")
    proc = cli("extract", str(ds), "--out", str(root / "review-out"), "--no-progress", "--extractor", "heuristic",
               "--review", "1")
    index = root / "review-out" / "review" / "index.html"
    hrefs = re.findall(r'href="([^"]*)"', index.read_text(encoding="utf-8")) if index.is_file() else []
    own = root / "review-out" / "review" / "pages" / "index.html"
    ok = (len(hrefs) == 3 and all(h.startswith("./pages/") and ":" not in h for h in hrefs)
          and "./pages/sub/index.html" in hrefs and own.is_file() and sentence("rv-1") in own.read_text("utf-8")
          and snapshot(ds, ds / "none") == before and "Traceback" not in proc.stderr)
    targets.append(("review links relative, encoded; index no page's", ok,
                    f"{len(hrefs)} links: {clip(' '.join(hrefs), 60)}"))

    ds = root / "annotate-ds"  # annotate: marking a page done rewrote pages.jsonl from 6 lines to 2
    (ds / "html").mkdir(parents=True)
    (ds / "html" / "a.html.gz").write_bytes(gzip.compress(article("an-a").encode(), mtime=0))
    raw = "".join(json.dumps(r) + "\n" for r in (
        {"id": "a", "html": "html/a.html.gz"}, {"id": "../skip", "html": "html/a.html.gz"},
        {"id": "b c", "html": "html/a.html.gz"}, {"id": "out", "html": "../x.html.gz"},
        {"id": "a", "html": "html/a.html.gz", "split": "dup"}, {"id": "c", "html": "html/a.html.gz"})).encode()
    (ds / "pages.jsonl").write_bytes(raw)
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    store.save("a", blocks, [int("Relief convoys reached" in b.text) for b in blocks], done=True)
    kept = (ds / "pages.jsonl").read_bytes() == raw
    targets.append(("annotate keeps pages.jsonl byte for byte", kept, f"{len(raw.splitlines())} lines, "
                    + ("unchanged" if kept else "REWRITTEN")))

    page = root / "page.html"  # checkpoints: each refused at load, in one line, before the output folder
    page.write_text(article("ck"), encoding="utf-8")
    shipped = REPO_ROOT / "checkpoints" / "default"
    good = json.loads((shipped / "config.json").read_text(encoding="utf-8"))
    cases = {"tampered context.onnx": None, "d_model 4096 against 256": {**good, "model": {**good["model"],
             "d_model": 4096}}, "config a JSON list": [1, 2], "threshold null": {**good, "threshold": None},
             "no model key": {k: v for k, v in good.items() if k != "model"}, "deep nesting": "[" * 100_000}
    refused = []
    for name, config in cases.items():
        folder = root / "ck" / re.sub(r"\W+", "-", name)
        shutil.copytree(shipped, folder)
        if config is None:
            data = bytearray((folder / "context.onnx").read_bytes())
            data[len(data) // 2 : len(data) // 2 + 4096] = bytes(b ^ 0xFF for b in data[len(data) // 2 :
                                                                                           len(data) // 2 + 4096])
            (folder / "context.onnx").write_bytes(bytes(data))
        else:
            (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
        proc = cli("extract", str(page), "--out", str(folder / "out"), "--no-progress", "--extractor", "model",
                   "--checkpoint", str(folder))
        lines = proc.stderr.strip().splitlines()
        if proc.returncode == 2 and len(lines) == 1 and "internal error" not in proc.stderr \
                and not (folder / "out").exists():
            refused.append(name)
        else:
            print(f"  checkpoint {name}: exit {proc.returncode}, {len(lines)} stderr lines: {clip(proc.stderr, 200)}")
    targets.append(("bad checkpoints refused in one line", len(refused) == len(cases),
                    f"{len(refused)}/{len(cases)}"))

    src = root / "sigint-in"  # Ctrl-C to the process group, three times, in five runs
    src.mkdir()
    for n in range(400):
        (src / f"p{n:03d}.html").write_text(article(f"int-{n}", extra="".join(f"<p>{p}</p>" for p in PARAGRAPHS * 20)),
                                            encoding="utf-8")
    quiet, statuses = 0, []
    for run_no, delay in enumerate((0.0, 0.05, 0.1, 0.3, 0.6)):
        out = root / f"sigint-out{run_no}"
        proc = subprocess.Popen([sys.executable, "-m", "bodyblocks", "extract", str(src), "--out", str(out),
                                 "--no-progress", "--extractor", "heuristic", "--workers", "2"], cwd=REPO_ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not any(out.glob("p*.txt")):
            time.sleep(0.02)
        time.sleep(delay)
        for _ in range(3):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(0.03)
        _, err = proc.communicate(timeout=120)
        statuses.append(proc.returncode)
        quiet += "Traceback" not in err and "ForkProcess" not in err and proc.returncode in (0, 130)
    targets.append(("Ctrl-C x3 to the process group: no traceback", quiet == len(statuses),
                    f"{quiet}/{len(statuses)} quiet, exit {statuses}"))
    return targets


def main() -> int:
    ap = arguments(__doc__)
    ap.add_argument("--out", type=Path, default=None, help="build and run here (kept); default: a temp folder")
    ap.add_argument("--extractor", default=None, help="default: the CLI's default (the ensemble)")
    ap.add_argument("--workers", type=int, default=None, help="parsing processes (default: the CLI's, 1)")
    ap.add_argument("--page-timeout", type=int, default=60, help="the CLI's --page-timeout; the slowest-page target")
    ap.add_argument("--timeout", type=float, default=WALL_TIMEOUT_S, help="wall-clock limit of the whole run (s)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        if any(args.out.iterdir()):
            ap.error(f"--out {args.out} is not empty (an earlier run's outputs would be resumed)")
        root = args.out.resolve()
    else:
        root = Path(tempfile.mkdtemp(prefix="bb-hostile-")).resolve()
    corpus = Corpus(root)
    try:
        return run(corpus, args)
    finally:
        corpus.unlock()
        if args.out is None and not args.keep:
            if (root / "in" / "deep").exists():
                remove_deep(root / "in" / "deep")
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"(kept {root})")


def run(corpus: Corpus, args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    corpus.build()
    root, out = corpus.root, corpus.root / "out"
    cases = corpus.cases
    disk = sum(st.st_blocks * 512 for _, st in entries(root))
    print(f"corpus: {len(cases)} inputs ({sum(c.good for c in cases)} good pages, "
          f"{sum(not c.good for c in cases)} hostile) in {root}, {disk / 2**20:.1f} MiB on disk, built in "
          f"{time.perf_counter() - t0:.0f} s")
    before = snapshot(root, out)
    res = run_cli([corpus.src, corpus.ds, corpus.urls], out, args, root / "time.txt")
    after = snapshot(root, out)
    after.pop(b"time.txt", None)
    print("command: " + " ".join(a if re.fullmatch(r"[\w/.:=+-]+", a) else repr(a) for a in res.cmd))
    state = "killed at the wall-clock limit" if res.status is None else f"exit status {res.status}"
    print(f"{state} after {res.wall_s:.0f} s; peak RSS "
          f"{'unknown' if res.rss_kib is None else f'{res.rss_kib / 1024:.0f} MiB'}")
    err_lines = res.stderr.strip().splitlines()
    print("stderr" + (f" (last 25 of {len(err_lines)} lines)" if len(err_lines) > 25 else "") + ":")
    for line in err_lines[-25:]:
        print(f"  | {line}")

    report_path = out / "report.json"
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"\nno usable report.json: {exc}")
        report = {"pages": [], "totals": {}, "status": "missing"}
    lines = report.get("pages", [])
    found, stray = match(cases, lines)
    summary = report_table(cases, found, out)
    if stray:
        print(f"\nreport lines no input accounts for ({len(stray)}):")
        for line in stray[:20]:
            print(f"  - id {line.get('id')!r} input {line.get('input')!r}: {outcome(line)}")

    expected_pages = sum(c.must_report for c in cases)
    accounted = sum(1 for i, c in enumerate(cases) if c.must_report and found[i])
    once = all(len(found[i]) <= 1 for i in range(len(cases)))
    written = sorted(set(after) - set(before)) + sorted(k for k in before if k in after and after[k] != before[k])
    gone = sorted(set(before) - set(after))
    leak = leaks(out, lines)
    slowest = max(lines, key=lambda line: line.get("seconds") or 0, default=None)
    slow_s = (slowest or {}).get("seconds") or 0.0
    totals = report.get("totals", {})

    print(f"\nreport.json: status {report.get('status')}, {totals.get('pages')} pages, {totals.get('ok')} ok, "
          f"{totals.get('failed')} failed, {totals.get('truncated')} truncated; reasons {totals.get('reasons')}")
    print(f"pages accounted for: {accounted} of {expected_pages} expected; {len(lines)} report lines "
          f"({len(stray)} unclaimed)")
    print(f"good pages extracted (sentence in output): {summary['good_ok']} of {summary['good']}")
    print(f"hostile cases as expected: {summary['hostile_ok']} of {summary['hostile']}")
    print(f"written outside --out: {len(written)} changed/new, {len(gone)} removed")
    for k in (written + gone)[:10]:
        print(f"  - {os.fsdecode(k)!r}")
    for p in leak[:10]:
        print(f"  - {p}")
    if slowest:
        print(f"slowest page: {slowest.get('id')!r} {slow_s:.1f} s ({outcome(slowest)})")
        shared: dict[float, int] = {}
        for line in lines:
            if line.get("status") == "ok" and (line.get("seconds") or 0) >= 0.5:
                key = round(line["seconds"], 1)  # a group's share, plus each page's own parse time
                shared[key] = shared.get(key, 0) + 1
        if any(n > 1 for n in shared.values()):
            print(f"  (caution: {sum(n for n in shared.values() if n > 1)} ok pages share their seconds (to 0.1 s) "
                  "with others: pages classified together report the group's time split evenly, so one slow page "
                  "in a group shows less than it took)")

    crashed = "Traceback" in res.stderr
    targets = [
        ("run finished inside the wall limit, no traceback", res.status is not None and not crashed,
         state + (", traceback in stderr" if crashed else "")),
        ("every input accounted for, once", accounted == expected_pages and once and not stray and
         totals.get("pages") == len(lines), f"{accounted}/{expected_pages}, {len(stray)} unclaimed"),
        ("every hostile case handled as expected", summary["hostile_ok"] == summary["hostile"],
         f"{summary['hostile_ok']}/{summary['hostile']}"),
        ("every good page extracted", summary["good_ok"] == summary["good"], f"{summary['good_ok']}/{summary['good']}"),
        ("nothing written outside --out", not written and not gone, f"{len(written) + len(gone)} entries"),
        ("no output file outside --out", not leak, f"{len(leak)} problems"),
        ("exit status 1 (some pages fail)", res.status == 1, str(res.status)),
        ("peak RSS <= 1.5 GiB", res.rss_kib is not None and res.rss_kib <= RSS_TARGET_KIB,
         "unknown" if res.rss_kib is None else f"{res.rss_kib / 1024:.0f} MiB"),
        (f"slowest page <= page timeout ({args.page_timeout} s)", slowest is not None and slow_s <= args.page_timeout,
         f"{slow_s:.1f} s, {(slowest or {}).get('id')!r}"),
        *other_attacks(root / "other"),  # review, annotate, checkpoints, Ctrl-C
        *reruns(root / "again"),
        *all_scenarios(root / "attacks"),  # benchmarks/attacks/*.py
    ]
    print("\ntargets:")
    for label, met, detail in targets:
        print(f"  {label:52} {'met' if met else 'NOT MET':8} ({detail})")
    return 0 if all(met for _, met, _ in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
