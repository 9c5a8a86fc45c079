"""The library's speed beside the CLI's: `bodyblocks.extract` in a loop against `bodyblocks extract DIR`.

    python -m benchmarks.api_speed                    # 300 dataset pages (synthetic ones without the datasets)
    python -m benchmarks.api_speed --pages 500 --rounds 3

Both with default settings, one process each, on the same folder of pages, alternating (median of the
rounds). The API's figure is pages / seconds of the extract loop in a fresh process after its first call
(which loads the model: its seconds are printed apart); the CLI's is report.json's pages_per_s (the run from
its first page to its report, the model loaded before).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

API_LOOP = """
import sys, time
from pathlib import Path
import bodyblocks
files = sorted(Path(sys.argv[1]).glob("*.html"))
start = time.perf_counter()
bodyblocks.extract(files[0])  # builds the default extractor (loads the model)
first = time.perf_counter() - start
for f in files[1:]:
    bodyblocks.extract(f)
print(first, (len(files) - 1) / (time.perf_counter() - start - first))
"""


def write_pages(folder: Path, n: int) -> int:
    """`n` pages spread over the shared datasets' test splits (synthetic pages when they are absent)."""
    from bodyblocks.files import datasets_root
    from bodyblocks.training.datasets import page_from_record, read_records

    folder.mkdir(parents=True, exist_ok=True)
    root = datasets_root()
    names = ("cleaneval-en", "daniel", "dragnet", "l3s-gn1", "wcxb-dev")
    if root is not None and all((root / d / "pages.jsonl").exists() for d in names):
        per = -(-n // len(names))
        count = 0
        for d in names:
            records = read_records(root / d)
            for rec in records[:: max(len(records) // per, 1)][:per]:
                (folder / f"{d}-{rec['id']}.html").write_bytes(page_from_record(root / d, rec).html)
                count += 1
        return count
    import random

    from bodyblocks.training.synth import synth_page

    for i in range(n):
        (folder / f"synth-{i}.html").write_bytes(synth_page(random.Random(i))[0])
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bodyblocks-api-speed-"))
    n = write_pages(work / "pages", args.pages)
    api, cli, loads = [], [], []
    for r in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", API_LOOP, str(work / "pages")], capture_output=True, text=True,
                             check=True)
        first, rate = map(float, out.stdout.strip().splitlines()[-1].split())
        api.append(rate)
        loads.append(first)
        target = work / f"out{r}"
        subprocess.run(["bodyblocks", "extract", str(work / "pages"), "--out", str(target), "--no-progress"],
                       capture_output=True, check=True)
        cli.append(json.loads((target / "report.json").read_text(encoding="utf-8"))["pages_per_s"])
        print(f"round {r + 1}: API {api[-1]:.1f} pages/s (first call {first:.2f} s), CLI {cli[-1]:.1f} pages/s",
              file=sys.stderr)
    a, c = statistics.median(api), statistics.median(cli)
    print(f"| {n} pages, median of {args.rounds} | pages/s |\n|---|---|\n| `bodyblocks.extract` loop (first call: "
          f"{statistics.median(loads):.2f} s) | {a:.1f} |\n"
          f"| `bodyblocks extract DIR` | {c:.1f} |\n| CLI / API | {c / a:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
