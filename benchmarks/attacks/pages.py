"""Attacks on what one page's extraction gets right: hostile page content and hostile use of the library.

  - JSON-LD nested 2,000 deep (arrays and objects): the page's body comes out through the CLI (the default
    extractor, json output), the metadata skips that JSON-LD and reads the next one, no RecursionError;
  - a GBK page (Chinese dialogue: quotes, dashes) with no declared charset: read as GB18030 through the CLI, its
    text in Chinese, not flagged as a guessed charset; a page whose charset only a detector can guess (Serbian
    in windows-1251) is flagged `guessed`;
  - a fresh `bodyblocks.load()` used from 8 threads at once, 3 rounds (in this process): every call answers, all
    with the text one thread alone gets;
  - a headline shown twice (a title <div> above the <h1>): the title once, the body without it, and the CLI's
    Markdown holds it once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from benchmarks.hostile.content import article, norm
from bodyblocks.runtime.files import REPO_ROOT

Target = tuple[str, bool, str]
TIMEOUT_S = 300  # per CLI run (the default extractor, a few pages)
THREADS, ROUNDS = 8, 3
HEADLINE = "Relief convoys reach the flooded valley"
DIALOGUE = ["“我们一定要把路修好。”他说——这是第一步。", "“明天还来吗？”“来！”……", "“桥呢？”“下个月。”——工程师答道。",
            "“水退了吗？”“退了一半。”", "“谢谢大家！”她笑着说。“不客气！”"]  # quotes and dashes: a fifth of it


def _cli(inputs: Path, out: Path, fmt: str) -> tuple[dict[str, dict[str, Any]], str]:
    """`bodyblocks extract INPUTS --out OUT --format FMT` (the default extractor): report.json's lines by page id
    (empty when there is none) and the process's stderr's last line."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", str(inputs), "--out", str(out), "--format", fmt,
           "--no-progress", "--workers", "1"]
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S)
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        return {}, "timed out"
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, tail
    return {Path(str(p.get("id") or p.get("input") or "")).name.split(".")[0]: p for p in report.get("pages", [])}, tail


def _json_output(out: Path, name: str) -> dict[str, Any]:
    found = sorted(out.rglob(f"{name}*.json"))
    return json.loads(found[0].read_text(encoding="utf-8")) if found else {}


def _pages(folder: Path) -> Path:
    folder.mkdir(parents=True)
    deep = '{"@type": "NewsArticle", "author": {"name": "Deep"}, "x": ' + "[" * 2000 + "1" + "]" * 2000 + "}"
    objects = '{"@graph": [' + '{"a": ' * 2000 + "1" + "}" * 2000 + "]}"
    fine = '{"@type": "NewsArticle", "author": {"name": "Maria Ortega"}}'
    scripts = "".join(f"<script type='application/ld+json'>{s}</script>" for s in (deep, objects, fine))
    (folder / "jsonld.html").write_text(article("jsonld", head=scripts), encoding="utf-8")
    zh = (f"<html><head><title>山谷日报</title></head><body><div class='content'><h1>救援车队抵达山谷</h1>"
          f"{''.join(f'<p>{p}</p>' for p in DIALOGUE * 3)}</div></body></html>")
    (folder / "gbk.html").write_bytes(zh.encode("gbk"))
    serbian = ("<html><body><h1>Вести из Београда</h1>" + "<p>Ђорђе Ђурђевић је рекао да ће се састанак одржати у "
               "понедељак. Према његовим речима, влада ће размотрити предлог закона о буџету.</p>" * 3
               + "</body></html>")
    (folder / "cp1251.html").write_bytes(serbian.encode("cp1251"))
    twice = article("twice").replace("<article>", f"<article><div class='headline'>{HEADLINE}</div>")
    (folder / "twice.html").write_text(twice, encoding="utf-8")
    return folder


def _threads() -> Target:
    import bodyblocks

    page = article("threads")
    alone = bodyblocks.load().extract(page).text
    errors: list[str] = []
    wrong = 0
    for _ in range(ROUNDS):
        extractor, barrier, texts = bodyblocks.load(), threading.Barrier(THREADS), []

        def one(ex: Any = extractor, gate: threading.Barrier = barrier, got: list[str] = texts) -> None:
            gate.wait()
            try:
                got.append(ex.extract(page).text)
            except Exception as e:  # noqa: BLE001 - counted for the target
                errors.append(f"{type(e).__name__}: {e}")

        workers = [threading.Thread(target=one) for _ in range(THREADS)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wrong += sum(t != alone for t in texts)
    met = not errors and not wrong and bool(alone)
    return (f"{THREADS} threads x fresh extractor ({ROUNDS} rounds)", met,
            f"{len(errors)} errors, {wrong} answers unlike one thread's" + (f"; first: {errors[0]}" if errors else ""))


def scenarios(root: Path) -> list[Target]:
    inputs = _pages(root / "in")
    report, tail = _cli(inputs, root / "json", "json")
    targets: list[Target] = []

    line, out = report.get("jsonld", {}), _json_output(root / "json", "jsonld")
    body = norm(out.get("text") or "")
    detail = f"status {line.get('status')!r}, {len(body)} chars, author {out.get('author')!r}"
    detail += (f", error {line.get('error')!r}" if line.get("error") else "") + ("" if line else f"; {tail}")
    targets.append(("JSON-LD nested 2,000 deep", line.get("status") == "ok" and "Engineers from the provincial" in body
                    and out.get("author") == "Maria Ortega", detail))

    line, out = report.get("gbk", {}), _json_output(root / "json", "gbk")
    text = out.get("text") or ""
    targets.append(("GBK page without a charset", line.get("encoding") == "gb18030" and "明天还来吗" in text
                    and "工程师答道" in text and not line.get("guessed"),
                    f"encoding {line.get('encoding')!r}, guessed {line.get('guessed')!r}, text {text[:20]!r}"))
    line = report.get("cp1251", {})
    targets.append(("a detector's single-byte guess is flagged", bool(line.get("guessed")),
                    f"encoding {line.get('encoding')!r}, guessed {line.get('guessed')!r}"))

    out = _json_output(root / "json", "twice")
    _cli(inputs, root / "md", "md")
    md = sorted((root / "md").rglob("twice*.md"))
    shown = md[0].read_text(encoding="utf-8").count(HEADLINE) if md else -1
    targets.append(("a headline shown twice is the title once", out.get("title") == HEADLINE
                    and HEADLINE not in (out.get("text") or "") and shown == 1,
                    f"title {out.get('title')!r}, in text: {HEADLINE in (out.get('text') or '')}, in Markdown "
                    f"{shown} times"))
    targets.append(_threads())
    return targets
