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

from benchmarks.cli_speed import write_pages  # the same pages as the whole-command benchmark

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
