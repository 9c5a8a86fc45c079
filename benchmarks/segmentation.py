"""Segmentation quality and speed on the gold pages of ../shared/datasets.

For every dataset with gold text it prints:
  * whole-line share: gold lines found whole inside one block (letters and digits compared, see squash);
  * fuzzy whole-line share: also counting lines that match inside one block at rapidfuzz partial_ratio >= 90
    (gold drops footnote marks, image captions' alt text and the like);
  * split share: gold lines not inside any one block but inside two or more consecutive blocks joined —
    the failure the segmenter must avoid (a line cut by markup);
  * clean decode share: pages decoded without replacement characters;
  * same: pages on which the lxml fast path and BeautifulSoup give identical blocks;
  * pages/s of `segment` (default parser, and BeautifulSoup) and of trafilatura's whole extraction on the
    same pages, one process, interleaved page by page in the same run (these machines are noisy).

Usage: python -m benchmarks.segmentation [--root ../shared/datasets] [--limit N] [--speed-pages N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

from bodyblocks.files import datasets_root
from bodyblocks.segment import segment
from bodyblocks.types import Document


def squash(text: str) -> str:
    """Letters and digits only: gold files differ from pages in quotes, dashes, bullets and in '?' or U+FFFD
    where the source mangled non-ASCII punctuation (l3s-gn1, dragnet), none of which is segmentation."""
    return "".join(c for c in text if c.isalnum()).lower()


def _key(doc: Document) -> list[tuple[str, str, str]]:
    return [(b.text, b.tag_path, b.xpath) for b in doc.blocks]


def line_coverage(blocks: list[str], gold_lines: list[str]) -> tuple[int, int, int, int, list[str]]:
    """(whole, fuzzy whole, split, total, missing lines) for one page."""
    from rapidfuzz import fuzz, process

    squashed = [squash(b) for b in blocks]
    joined = "\x00".join(squashed)  # a separator that no gold line contains
    glued = "".join(squashed)
    whole = fuzzy = split = total = 0
    missing: list[str] = []
    for line in gold_lines:
        g = squash(line)
        if len(g) < 2:
            continue
        total += 1
        if g in joined:
            whole += 1
            fuzzy += 1
        elif process.extractOne(g, [b for b in squashed if len(b) >= len(g)], scorer=fuzz.partial_ratio,
                                score_cutoff=90) is not None:  # the line sits (nearly) whole in one block
            fuzzy += 1
        elif g in glued:
            split += 1
            missing.append("SPLIT " + line)
        else:
            missing.append("ABSENT " + line)
    return whole, fuzzy, split, total, missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=datasets_root())
    ap.add_argument("--limit", type=int, default=0, help="pages per dataset (0 = all)")
    ap.add_argument("--speed-pages", type=int, default=60, help="pages per dataset timed against trafilatura")
    ap.add_argument("--show-missing", type=int, default=0)
    ap.add_argument("--datasets", nargs="*", default=None, help="only these dataset folders")
    ap.add_argument("--by-lang", action="store_true", help="also print the whole-line share per language")
    args = ap.parse_args()
    if args.root is None:
        raise SystemExit("no datasets root (set BODYBLOCKS_DATASETS or pass --root)")
    import trafilatura

    print(f"{'dataset':18s} {'pages':>5s} {'lines':>6s} {'whole':>6s} {'fuzzy':>6s} {'split':>6s} {'clean':>6s} "
          f"{'same':>6s} {'seg p/s':>8s} {'bs4 p/s':>8s} {'traf p/s':>8s}")
    for ds in sorted(p for p in args.root.iterdir() if (p / "pages.jsonl").exists()):
        if args.datasets and ds.name not in args.datasets:
            continue
        per_lang: dict[str, list[int]] = {}
        recs = [json.loads(line) for line in open(ds / "pages.jsonl", encoding="utf-8")]
        recs = [r for r in recs if r.get("gold")]
        if args.limit:
            recs = recs[: args.limit]
        if not recs:
            continue
        whole = fuzzy = split = total = clean = same = 0
        t_seg = t_bs4 = t_traf = 0.0
        n_timed = 0
        examples: list[str] = []
        for i, r in enumerate(recs):
            data = gzip.decompress((ds / r["html"]).read_bytes())
            gold = (ds / r["gold"]).read_text(encoding="utf-8")
            t0 = time.perf_counter()
            try:
                doc = segment(data)
            except ValueError as exc:
                examples.append(f"{r['id']}: ERROR {exc}")
                continue
            t1 = time.perf_counter()
            ref = segment(data, parser="bs4")
            t2 = time.perf_counter()
            same += _key(doc) == _key(ref)
            if i < args.speed_pages:
                trafilatura.extract(data)
                t_traf += time.perf_counter() - t2
                t_seg += t1 - t0
                t_bs4 += t2 - t1
                n_timed += 1
            clean += not doc.replaced
            w, f, s, t, missing = line_coverage([b.text for b in doc.blocks], gold.splitlines())
            whole, fuzzy, split, total = whole + w, fuzzy + f, split + s, total + t
            acc = per_lang.setdefault(r.get("lang") or "?", [0, 0])
            acc[0], acc[1] = acc[0] + w, acc[1] + t
            examples += [f"{r['id']}: {m[:120]}" for m in missing[:2]]
        rate = [n_timed / t if t else 0.0 for t in (t_seg, t_bs4, t_traf)]
        print(f"{ds.name:18s} {len(recs):5d} {total:6d} {whole / max(total, 1):6.3f} {fuzzy / max(total, 1):6.3f} "
              f"{split / max(total, 1):6.3f} "
              f"{clean / len(recs):6.3f} {same / len(recs):6.3f} {rate[0]:8.1f} {rate[1]:8.1f} {rate[2]:8.1f}",
              flush=True)
        if args.by_lang and len(per_lang) > 1:
            shares = ", ".join(f"{k} {v[0] / max(v[1], 1):.3f}" for k, v in sorted(per_lang.items()))
            print("     whole by language: " + shares)
        for e in examples[: args.show_missing]:
            print("    ", e)


if __name__ == "__main__":
    main()
