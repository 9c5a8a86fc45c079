"""Why gold lines are not whole in one block: classify each missing line of a dataset's gold pages.

  split                        the line spans several consecutive blocks (the gold joins block elements)
  absent-but-in-tagless-source its text is in the page source once tags are stripped (hidden, script, ...)
  in-markup/attributes         only inside markup (meta descriptions, attributes)
  not-in-page                  nowhere in the page (the gold comes from another version of the page)

Usage: python -m benchmarks.missing_lines DATASET [LANG] [--pages N]   (e.g. daniel pl)
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

from benchmarks.segmentation import line_coverage, squash
from bodyblocks.decode import decode_bytes, read_bytes
from bodyblocks.files import datasets_root
from bodyblocks.segment import segment


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("lang", nargs="?")
    ap.add_argument("--root", type=Path, default=datasets_root())
    ap.add_argument("--pages", type=int, default=150)
    args = ap.parse_args()
    if args.root is None:
        raise SystemExit("no datasets root (set BODYBLOCKS_DATASETS or pass --root)")
    ds = args.root / args.dataset
    recs = [json.loads(line) for line in open(ds / "pages.jsonl", encoding="utf-8")]
    recs = [r for r in recs if r.get("gold") and (args.lang is None or r["lang"] == args.lang)][: args.pages]
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for r in recs:
        data = read_bytes(ds / r["html"])
        doc = segment(data)
        gold = (ds / r["gold"]).read_text(encoding="utf-8")
        *_, missing = line_coverage([b.text for b in doc.blocks], gold.splitlines())
        source = decode_bytes(data).text
        tagless, full = squash(html.unescape(re.sub(r"<[^>]+>", "", source))), squash(html.unescape(source))
        for m in missing:
            kind, line = m.split(" ", 1)
            g = squash(line)
            k = ("split" if kind == "SPLIT" else "absent-but-in-tagless-source" if g in tagless
                 else "in-markup/attributes" if g in full else "not-in-page")
            counts[k] = counts.get(k, 0) + 1
            examples.setdefault(k, []).append(f"{r['id'][:50]}: {line[:100]}")
    print(f"{args.dataset} {args.lang or ''} ({len(recs)} pages):", counts)
    for k, v in examples.items():
        print(k)
        for e in v[:4]:
            print("   ", e)


if __name__ == "__main__":
    main()
