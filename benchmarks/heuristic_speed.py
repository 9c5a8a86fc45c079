"""ms/page of the `heuristic` extractor, to compare two source trees of bodyblocks on the same pages.

    python benchmarks/heuristic_speed.py [SRC_TREE]      # SRC_TREE: a checkout (e.g. a `git worktree` of an
                                                          # older commit); default: this one
Every 20th page of ../shared/datasets (300 pages), 20 pages of warm-up, best of 3 passes. Run two trees one
after the other, more than once: the machine is noisy.
"""

from __future__ import annotations

import gzip
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    tree = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO
    sys.path.insert(0, str(tree / "src"))
    import bodyblocks
    from bodyblocks.baselines.heuristic import HeuristicExtractor

    root = Path(os.environ.get("BODYBLOCKS_DATASETS", REPO.parent / "shared" / "datasets"))  # this checkout's
    if not root.is_dir():
        raise SystemExit(f"no datasets at {root} (set BODYBLOCKS_DATASETS)")
    pages = [gzip.decompress(p.read_bytes()) for p in sorted(root.glob("*/html/*.html.gz"))[::20][:300]]
    ex = HeuristicExtractor()
    for page in pages[:20]:
        ex.extract(page)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for page in pages:
            ex.extract(page)
        best = min(best, (time.perf_counter() - start) / len(pages) * 1000)
    print(f"{bodyblocks.__file__}: heuristic {best:.2f} ms/page (best of 3 passes over {len(pages)} pages)")


if __name__ == "__main__":
    main()
