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

import hashlib
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, need_root
from benchmarks.dom.causes import classify, html5_tree, other_parser_shares, part_of
from benchmarks.dom.lines import NON_ZH_PAGES, THRESHOLD, line_score, rendered_lines, select_pages, short, squash
from benchmarks.dom.render import CACHE_DIR, PAGE_TIMEOUT, PARTS, RENDER_VERSION, RenderCache, Renderer
from benchmarks.dom.report import fmt, write_report
from bodyblocks.errors import InputError
from bodyblocks.page.decode import read_bytes, to_text
from bodyblocks.page.segment import segment_tree
from bodyblocks.runtime.files import REPO_ROOT

EXAMPLES = 3  # missing lines kept per page under the threshold


# ----------------------------------------------------------------------------------------- one page
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
    print(f"{s['pages']} pages, {s['rendered']} rendered, mean line share {fmt(s['mean_line_share'])}, "
          f"{s['under']} under {THRESHOLD}, {s['zero_blocks']} with 0 blocks; {seconds:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
