"""The segmenter against the segmenter of an earlier revision: ms/page on the same pages, and equal blocks.

    python benchmarks/segment_speed.py                 # against 77dd392 (end of the second session)
    python benchmarks/segment_speed.py --rev HEAD~3 --pages 300 --rounds 5
    python benchmarks/segment_speed.py --all-pages     # equal blocks on every page of every dataset (no timing)

The old `segment.py` is read with `git show REV:src/bodyblocks/segment.py` and imported beside the current
one (both use the current decode.py). The two alternate for --rounds rounds over the same pages read into
memory (the page sample of benchmarks/throughput.py); the best round of each is reported with all rounds.
Every page's blocks, title and encoding are compared: a speed change must not change a block.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import astuple
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def load_old(rev: str, folder: Path):  # noqa: ANN201
    """The segment module of revision REV, imported from a temporary file."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:src/bodyblocks/segment.py"],
                            capture_output=True, text=True, check=True).stdout
    path = folder / "segment_old.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("segment_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same(old, new, page) -> bool:  # noqa: ANN001
    """Whether both segmenters give the same blocks, title and encoding (or the same error)."""
    out = []
    for module in (old, new):
        try:
            d = module.segment(page)
            out.append((d.title, d.encoding, [astuple(x) for x in d.blocks]))
        except Exception as exc:  # noqa: BLE001 - an error must be the same error
            out.append(type(exc).__name__)
    return out[0] == out[1]


def compare_all(root: Path, old, new, rev: str) -> None:  # noqa: ANN001
    """Equal blocks on every page of every dataset under ROOT."""
    import json

    from bodyblocks.decode import read_bytes

    pages = differ = 0
    for ds in sorted(p for p in root.iterdir() if (p / "pages.jsonl").exists()):
        for line in open(ds / "pages.jsonl", encoding="utf-8"):
            rec = json.loads(line)
            pages += 1
            if not _same(old, new, read_bytes(ds / rec["html"])):
                differ += 1
                print(f"different: {ds.name} {rec.get('id')}")
    print(f"{pages} pages: {differ} with different blocks than {rev}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=REPO.parent / "shared" / "datasets")
    ap.add_argument("--rev", default="77dd392", help="git revision whose segmenter is the baseline")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all-pages", action="store_true", help="only compare blocks, on every dataset page")
    args = ap.parse_args()

    from throughput import pick_pages

    from bodyblocks import segment as new
    from bodyblocks.decode import read_bytes

    tmp = Path(tempfile.mkdtemp(prefix="bb-segspeed-"))
    old = load_old(args.rev, tmp)
    if args.all_pages:
        compare_all(args.root, old, new, args.rev)
        return
    raw = [read_bytes(f) for f in pick_pages(args.root, args.pages, tmp)]
    times: dict[str, list[float]] = {args.rev: [], "current": []}
    for _ in range(args.rounds):
        for name, module in ((args.rev, old), ("current", new)):
            start = time.perf_counter()
            for page in raw:
                module.segment(page)
            times[name].append((time.perf_counter() - start) / len(raw) * 1000)
    differ = sum(not _same(old, new, page) for page in raw)
    print(f"{len(raw)} pages, {args.rounds} rounds, ms/page (best, then every round):")
    for name, rounds in times.items():
        print(f"  {name:10s} {min(rounds):6.1f}   " + " ".join(f"{t:.1f}" for t in rounds))
    print(f"speed-up {min(times[args.rev]) / min(times['current']):.2f}x; pages with different blocks: {differ}")


if __name__ == "__main__":
    main()
