"""The segmenter against the segmenter of an earlier revision: ms/page on the same pages, and equal blocks.

    python -m benchmarks.segment_speed                 # against 77dd392 (end of the second session)
    python -m benchmarks.segment_speed --rev HEAD~3 --pages 300 --rounds 5
    python -m benchmarks.segment_speed --all-pages     # equal blocks on every page of every dataset (no timing)

The old `segment.py` is read with `git show REV:src/bodyblocks/segment.py` into a temporary folder, as the
module `segment_old`, and imported beside the current one (both use the current decode.py) in a subprocess
whose PYTHONPATH starts with that folder (this benchmark, re-run). The two alternate for --rounds rounds over
the same pages read into memory (the page sample of benchmarks/throughput.py); the best round of each is
reported with all rounds. Every page's blocks, title and encoding are compared: a speed change must not
change a block.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import astuple
from pathlib import Path

from bodyblocks.files import REPO_ROOT, datasets_root

OLD_MODULE = "segment_old"  # the old segment.py's name in the temporary folder


def write_old(rev: str, folder: Path) -> Path:
    """The segment.py of revision REV, written to FOLDER/segment_old.py."""
    source = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{rev}:src/bodyblocks/segment.py"],
                            capture_output=True, text=True, check=True).stdout
    path = folder / f"{OLD_MODULE}.py"
    path.write_text(source, encoding="utf-8")
    return path


def rerun_with_old(rev: str, folder: Path, argv: list[str]) -> int:
    """This benchmark again in a subprocess that can import the old segmenter (FOLDER first on PYTHONPATH)."""
    write_old(rev, folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "benchmarks.segment_speed", *argv, "--child"]
    return subprocess.run(cmd, env=env, cwd=REPO_ROOT, check=False).returncode


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
    ap.add_argument("--root", type=Path, default=datasets_root())
    ap.add_argument("--rev", default="77dd392", help="git revision whose segmenter is the baseline")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all-pages", action="store_true", help="only compare blocks, on every dataset page")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bb-segspeed-"))
    if not args.child:
        raise SystemExit(rerun_with_old(args.rev, tmp, sys.argv[1:]))

    from benchmarks.throughput import pick_pages
    from bodyblocks import segment as new
    from bodyblocks.decode import read_bytes

    old = importlib.import_module(OLD_MODULE)
    if args.all_pages:
        if args.root is None:
            raise SystemExit("no datasets root (set BODYBLOCKS_DATASETS or pass --root)")
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
