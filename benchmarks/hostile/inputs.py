"""The hostile corpus's inputs: a folder of hostile files and good pages, a dataset folder whose
records try to escape, a URL list of no http(s) URL (Corpus)."""

from __future__ import annotations

import gzip
import json
import os
import random
import socket
import sys
from pathlib import Path
from typing import Any

from benchmarks.hostile.cases import Case, Check, contains, encoding_is, encoding_not, id_inside, no_body, truncated
from benchmarks.hostile.content import CANARY, CHINESE, PARAGRAPHS, article, chinese_article, clip, printable, sentence
from benchmarks.hostile.folders import deep_chain

BOMB_BYTES = 1100 * 2**20  # what the bomb inflates to (> 1 GB)
SPARSE_BYTES = 100 * 2**20  # a sparse file: no disk, but more than any page may be
DEEP_LEVELS = 1100  # folders of IN/deep: os.walk, shutil.rmtree and os.makedirs recurse once a level


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
