"""Memory of a long `bodyblocks extract` run: resident set size against pages done, to show it stays flat.

    python -m benchmarks.memory_flat --pages 20000                        # the default extractor, CPU
    python -m benchmarks.memory_flat --pages 100000 --extractor heuristic

The input is a folder tree of PAGES symbolic links to --distinct real pages from the shared datasets
(synthetic pages when they are absent), 500 links per sub-folder, so every page has its own output file and
report line, as in a real crawl; the pages repeat, the outputs do not. One process (parsing workers: 1),
the CLI's defaults otherwise. A thread samples this process's RSS (VmRSS) and the pages written so far
(lines of DIR/report.pages.jsonl) every --every seconds; the table shows the samples, then the median RSS
in each fifth of the pages (the first fifth fills the bounded caches; flat means the later fifths agree).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import arguments


def rss_mb() -> float:
    """This process's resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def link_tree(files: list[str], n: int, root: Path, per_folder: int = 500) -> Path:
    """ROOT/in/<k>/<i>.html(.gz) -> the given files in turn, n links in all."""
    src = root / "in"
    for i in range(n):
        target = os.path.abspath(files[i % len(files)])
        folder = src / f"{i // per_folder:05d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        suffix = ".html.gz" if target.endswith(".gz") else ".html"
        os.symlink(target, folder / f"{i:07d}{suffix}")
    return src


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


def main() -> None:
    ap = arguments(__doc__, root=True, pages=20000)
    ap.add_argument("--distinct", type=int, default=600, help="real pages behind the links")
    ap.add_argument("--extractor", default=None, help="default: the CLI's default extractor")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = ap.parse_args()

    from benchmarks.throughput import pick_pages
    from bodyblocks.batch import BatchOptions, default_threads, run_batch
    from bodyblocks.loading.options import ExtractOptions
    from bodyblocks.loading.registry import TORCH, default_extractor_name, get_extractor

    work = Path(tempfile.mkdtemp(prefix="bb-memory-"))
    files = pick_pages(args.root, args.distinct, work / "pages")
    src = link_tree(files, args.pages, work)
    out = work / "out"
    name = args.extractor or default_extractor_name()
    options = ExtractOptions(device="cpu", threads=default_threads(1, True)) if name in TORCH else ExtractOptions()
    get_extractor(name, options if name in TORCH else None)  # imports and the first load before the first sample
    samples: list[tuple[float, int, float]] = []
    done = threading.Event()

    def sample() -> None:
        t0 = time.perf_counter()
        while not done.wait(args.every):
            samples.append((time.perf_counter() - t0, count_lines(out / "report.pages.jsonl"), rss_mb()))

    base = rss_mb()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    totals = run_batch([src], out, BatchOptions(extractor=name, options=options, workers=1, resume=False,
                                                progress=False))
    done.set()
    sampler.join()
    seconds = time.perf_counter() - start
    samples.append((seconds, totals.pages, rss_mb()))
    print(f"{args.pages} pages ({len(files)} distinct) with {name}: {totals.ok} ok, {totals.failed} failed, "
          f"{seconds:.0f} s ({totals.pages / seconds:.1f} pages/s); RSS after loading {base:.0f} MB")
    print(f"{'seconds':>8s} {'pages':>8s} {'RSS MB':>8s}")
    step = max(1, len(samples) // 20)
    for t, pages, mb in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else []):
        print(f"{t:8.0f} {pages:8d} {mb:8.0f}")
    fifths = []
    for k in range(5):  # median RSS of the samples in each fifth of the pages (single samples spike on big pages)
        lo, hi = totals.pages * k / 5, totals.pages * (k + 1) / 5
        part = sorted(mb for _, pages, mb in samples if lo < pages <= hi) or [float("nan")]
        fifths.append(part[len(part) // 2])
    peak = max(mb for _, _, mb in samples)
    print("median RSS MB by fifth of the pages: " + ", ".join(f"{mb:.0f}" for mb in fifths)
          + f"; peak {peak:.0f} MB; last fifth - second fifth {fifths[4] - fifths[1]:+.0f} MB")


if __name__ == "__main__":
    main()
