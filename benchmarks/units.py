"""Per-page token F1 of the shipped default before and after a segmentation change, and the pages whose text moved.

    python -m benchmarks.units run --split train,val --out /tmp/after.jsonl          # this tree's default extractor
    python -m benchmarks.units compare /tmp/before.jsonl /tmp/after.jsonl            # means per source, pages changed

`run` extracts every page of the chosen splits of wcxb-dev and the news sources (those with full gold text) with
bodyblocks.load(), scores the text as `bodyblocks evaluate` does (evaluation.evaluate.scored_text under the source's
gold convention, metrics.score_page) and writes one JSON line a page: source, id, token F1 and the scored text. A
page that fails is recorded with its reason and scored as an empty extraction. Run it once on each revision
(PYTHONPATH naming that revision's src) and `compare` the two files: mean F1 per source on both sides, the change,
and how many pages' text changed at all.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import arguments

SPLITS = Path(__file__).resolve().parent.parent / "data" / "splits"
SOURCES = ("wcxb-dev", "cleaneval-en", "cleanportaleval", "daniel", "dragnet", "gne-pages", "l3s-gn1")


def run(sources: Sequence[str], splits: Sequence[str], out: Path, limit: int | None = None) -> int:
    """Extract and score the pages; one JSON line each into `out`. Returns the number of pages."""
    import bodyblocks
    from bodyblocks.errors import InputError
    from bodyblocks.evaluation.evaluate import scored_text
    from bodyblocks.metrics import score_page
    from bodyblocks.training.datasets import gold_convention, page_from_record, read_records, resolve_dataset
    from bodyblocks.training.splits import load_split_ids

    extractor = bodyblocks.load()
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for source in sources:
            folder = resolve_dataset(source)
            convention = gold_convention(source)
            ids: set[str] = set()
            for split in splits:
                ids |= load_split_ids(source, split, SPLITS)  # this tree's, whichever src runs
            records = [r for r in read_records(folder) if r["id"] in ids and r.get("gold")]
            for rec in records[:limit]:
                page = page_from_record(folder, rec)
                error = page.meta.get("error")
                text = ""
                if error is None:
                    try:
                        text = scored_text(extractor.extract(page.html, page.url), convention)
                    except (InputError, ValueError, RuntimeError) as exc:
                        error = f"{type(exc).__name__}: {exc}"
                f1 = score_page(page.gold, text).token_f1
                fh.write(json.dumps({"source": source, "id": page.id, "f1": f1, "error": error, "text": text},
                                    ensure_ascii=False) + "\n")
                n += 1
    return n


def _read(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return {(r["source"], r["id"]): r for r in map(json.loads, fh)}


def compare(before: Path, after: Path) -> str:
    """A Markdown table: per source, pages, mean token F1 before and after, the change, pages whose text changed."""
    a, b = _read(before), _read(after)
    by_source: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for key in sorted(a.keys() & b.keys()):
        by_source[key[0]].append((a[key], b[key]))
    rows = ["| source | pages | F1 before | F1 after | change | text changed | better | worse |",
            "|---|---|---|---|---|---|---|---|"]
    for source, pairs in by_source.items():
        n = len(pairs)
        f0 = sum(x["f1"] or 0.0 for x, _ in pairs) / n
        f1 = sum(y["f1"] or 0.0 for _, y in pairs) / n
        changed = sum(x["text"] != y["text"] for x, y in pairs)
        better = sum((y["f1"] or 0.0) > (x["f1"] or 0.0) + 1e-9 for x, y in pairs)
        worse = sum((y["f1"] or 0.0) < (x["f1"] or 0.0) - 1e-9 for x, y in pairs)
        rows.append(f"| {source} | {n} | {f0:.4f} | {f1:.4f} | {f1 - f0:+.4f} | {changed} | {better} | {worse} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = arguments(__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="extract and score the pages of the chosen splits")
    r.add_argument("--split", default="train,val", help="comma-separated splits (train, val, test)")
    r.add_argument("--sources", default=",".join(SOURCES), help="comma-separated datasets")
    r.add_argument("--limit", type=int, default=None, help="at most this many pages a source")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare", help="compare two runs")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        n = run(args.sources.split(","), args.split.split(","), args.out, args.limit)
        print(f"{n} pages -> {args.out}")
    else:
        print(compare(args.before, args.after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
