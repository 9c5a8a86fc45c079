"""ms/page of the `heuristic` extractor, to compare two source trees of bodyblocks on the same pages.

    python -m benchmarks.heuristic_speed [SRC_TREE]       # SRC_TREE: a checkout (e.g. a `git worktree` of an
                                                          # older commit); default: this one
Every 20th page of the datasets root (300 pages), 20 pages of warm-up, best of 3 passes. Run two trees one
after the other, more than once: the machine is noisy. Another tree runs in a subprocess whose PYTHONPATH
starts with SRC_TREE/src (its bodyblocks is imported, not this one's); the datasets root is this checkout's
(bodyblocks.files.datasets_root, or --root).
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path


def measure(root: Path) -> None:
    """Time the heuristic of the bodyblocks that this process imports, and print the figure."""
    import bodyblocks
    from bodyblocks.baselines.heuristic import HeuristicExtractor

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", nargs="?", type=Path, help="a source tree of bodyblocks (default: this checkout)")
    ap.add_argument("--root", type=Path, default=None, help="datasets root (default: bodyblocks.files.datasets_root)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:  # run by the parent below with the other tree first on PYTHONPATH: import nothing else here
        measure(args.root)
        return

    from bodyblocks.files import ENV_DATASETS, REPO_ROOT, datasets_root

    root = args.root or datasets_root()
    if root is None or not root.is_dir():
        raise SystemExit(f"no datasets at {root or REPO_ROOT.parent / 'shared' / 'datasets'} (set {ENV_DATASETS})")
    if args.tree is None or args.tree.resolve() == REPO_ROOT:
        measure(root)
        return
    src = args.tree.resolve() / "src"
    if not (src / "bodyblocks").is_dir():
        raise SystemExit(f"no bodyblocks package under {src}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "benchmarks.heuristic_speed", "--child", "--root", str(root)]
    raise SystemExit(subprocess.run(cmd, env=env, cwd=REPO_ROOT, check=False).returncode)


if __name__ == "__main__":
    main()
