"""The segmenter (segment.segment_tree) in CPU ms per page, and against another revision's segmenter.

    python -m benchmarks.walk_speed                       # 500 dataset pages (cli_speed's folder of them)
    python -m benchmarks.walk_speed --against 12f5a43     # and that revision's, alternating, same pages
    python -m benchmarks.walk_speed --against 12f5a43 --all-pages   # equal output on every dataset page

Each page is segmented with segment_tree, timed with process_time, for --rounds rounds; the walk alone
(walk.walk_blocks on the parsed tree) is timed too. With --against, that revision's walk.py and segment.py
(`git show REV:PATH`) are loaded under other names beside this tree's in the same process (both use this
tree's decode.py, htmltags.py and types.py), the two run in turn on every page (which goes first alternates),
and the pages whose output differs are counted: every field of every block, the title, the encoding and the
flags, and the serialised tree that segment_tree returns (the tree the heuristic's vote prunes). A change
meant to be faster only must print 0; the exit status is 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import astuple
from pathlib import Path
from typing import Any

from benchmarks.revisions import comparison_args, in_turn, revision_modules, sample_pages
from bodyblocks.files import datasets_root

# the segmenter's modules, with the imports that tie them together (renamed for the other revision's copy)
MODULES = (("walk", "src/bodyblocks/walk.py", ()),
           ("segment", "src/bodyblocks/segment.py", (("bodyblocks.walk", "walk"),)))


def revision_segmenter(rev: str) -> tuple[Any, Any]:
    """(segment module, walk module) of revision `rev`, as they are there, loaded under other names."""
    loaded = revision_modules(rev, MODULES, "walk_speed")
    return loaded["segment"], loaded["walk"]


def output(segment: Any, html: bytes) -> Any:
    """All that segment_tree gives for a page, comparable with ==: the document's fields with every block's,
    and the serialised tree (or the error's type)."""
    from lxml import etree

    try:
        doc, tree = segment.segment_tree(html)
    except Exception as exc:  # noqa: BLE001 - an error must be the same error
        return type(exc).__name__
    return (doc.title, doc.encoding, doc.replaced, doc.truncated, [astuple(b) for b in doc.blocks],
            None if tree is None else etree.tostring(tree, encoding="unicode"))


def time_pages(pages: list[bytes], segmenters: dict[str, tuple[Any, Any]], rounds: int) -> int:
    """Print CPU ms per page of segment_tree and of the walk alone for each segmenter; returns the number of
    pages whose output differs between the first two."""
    clock = time.process_time
    seg = dict.fromkeys(segmenters, 0.0)
    walk = dict.fromkeys(segmenters, 0.0)
    differ = 0
    for r in range(rounds):
        for i, html in enumerate(pages):
            for name in in_turn(list(segmenters), i, r):
                segment, walker = segmenters[name]
                t0 = clock()
                segment.segment_tree(html)
                t1 = clock()
                seg[name] += t1 - t0
                text = segment._prepare(html, segment.MAX_CHARS)[0]
                try:
                    tree, parser = segment.parse(text, "lxml"), "lxml"
                except segment._TooDeep:
                    tree, parser = segment.parse(text, "bs4"), "bs4"
                t2 = clock()
                walker.walk_blocks(tree, parser)
                walk[name] += clock() - t2
            if r == 0 and len(segmenters) > 1:
                differ += len({repr(output(segmenters[name][0], html)) for name in segmenters}) > 1
    n = rounds * len(pages)
    print(f"{len(pages)} pages x {rounds} rounds, CPU ms per page")
    for name in segmenters:
        print(f"  {name}: segment_tree {1000 * seg[name] / n:.2f}, walk_blocks {1000 * walk[name] / n:.2f}")
    if len(segmenters) > 1:
        first, second = list(segmenters)[:2]
        print(f"  segment_tree {1000 * seg[second] / n:.2f} -> {1000 * seg[first] / n:.2f} ms/page "
              f"({100 * (seg[first] / seg[second] - 1):+.1f} %)")
        print(f"  pages whose output differs: {differ} of {len(pages)}")
    return differ


def compare_all(root: Path, segmenters: dict[str, tuple[Any, Any]]) -> int:
    """The number of dataset pages under ROOT (every page of every dataset) whose output differs."""
    from bodyblocks.decode import read_bytes

    (a, _), (b, _) = list(segmenters.values())[:2]
    pages = differ = 0
    for ds in sorted(p for p in root.iterdir() if (p / "pages.jsonl").exists()):
        for line in open(ds / "pages.jsonl", encoding="utf-8"):
            if not line.strip():
                continue
            rec = json.loads(line)
            html = read_bytes(ds / rec["html"])
            pages += 1
            if output(a, html) != output(b, html):
                differ += 1
                print(f"different: {ds.name} {rec.get('id')}")
    print(f"{pages} pages: {differ} with different output")
    return differ


def main(argv: list[str] | None = None) -> int:
    ap = comparison_args(__doc__.splitlines()[0], "segmenter")
    ap.add_argument("--all-pages", action="store_true", help="only compare output, on every dataset page")
    ap.add_argument("--root", type=Path, default=None, help="datasets root for --all-pages")
    args = ap.parse_args(argv)

    from bodyblocks import segment, walk

    segmenters = {"this tree": (segment, walk), **({args.against: revision_segmenter(args.against)}
                                                   if args.against else {})}
    if args.all_pages:
        root = args.root or datasets_root()
        if root is None or len(segmenters) < 2:
            raise SystemExit("--all-pages needs --against REV and a datasets root (BODYBLOCKS_DATASETS or --root)")
        return 1 if compare_all(root, segmenters) else 0
    pages = sample_pages(args.pages, "bb-walk-")
    return 1 if time_pages(pages, segmenters, args.rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
