"""Pages/s of bodyblocks' datatrove step against datatrove's own Trafilatura step, on the same WARC, in one run.

    python -m benchmarks.datatrove_speed                              # 300 dragnet test pages, 3 rounds
    python -m benchmarks.datatrove_speed --pages 300 --rounds 3 --write docs/SPEED.md#datatrove

A WARC of --pages pages of a dataset's split (dragnet's test split by default, read with
training.datasets.read_dataset, the dataset's pages repeated where it has fewer), written in a temporary folder
with batch.warc.write_warc, is read once with datatrove's WarcReader (the reader's own decoding: UTF-8, else
cchardet). Each step then runs over the same documents, the steps in turns, their order rotating each round:
`BodyblocksExtractor()` (the shipped ensemble), `BodyblocksExtractor(checkpoint="fast")` (the fast preset) and
datatrove's `Trafilatura()` (its defaults, as FineWeb ran it: favour_precision, deduplicate), every one with the
same per-document --timeout so that no page is dropped for time alone. Each step runs as datatrove runs it: the
documents sent to its sandbox process one by one.

Per step and round: pages/s once started (the pages after the first over the time after the first: the sandbox's
start, the model's loading and the first page left out); the start (the first page's time); CPU ms per page
of this process and of the sandbox's (getrusage of this process and its reaped children; start included); the
documents kept (with body text) and the timeouts. The table gives each figure's median over the rounds.
"""

from __future__ import annotations

import itertools
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, need_root, write_report


def make_warc(root: Path, dataset: str, split: str | None, n: int, path: Path) -> dict[str, Any]:
    """A WARC of n pages of the dataset's split (repeated where it has fewer), one gzip member per record."""
    from bodyblocks.batch.warc import Response, write_warc
    from bodyblocks.training.datasets import read_dataset

    pages = [p for p in read_dataset(root / dataset) if (split is None or p.split == split)
             and not p.meta.get("error") and p.html]
    if not pages:
        raise SystemExit(f"datatrove_speed: no pages in {root / dataset} (split {split})")
    responses = []
    for i, page in zip(range(n), itertools.cycle(pages), strict=False):
        body = page.html if isinstance(page.html, bytes) else page.html.encode("utf-8")
        responses.append(Response(page.url or f"http://{dataset}.example/{i}/{page.id}", body, "text/html"))
    write_warc(path, responses)
    return {"dataset": dataset, "split": split, "pages": len(responses), "distinct": min(n, len(pages)),
            "html_bytes_per_page": round(sum(len(r.body) for r in responses) / len(responses))}


def read_documents(folder: Path) -> list[Any]:
    """The WARC's documents, as datatrove's WarcReader gives them."""
    from datatrove.pipeline.readers import WarcReader

    return list(WarcReader(str(folder)).run())


def cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended (the steps' sandbox processes)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed_run(step: Any, docs: list[Any]) -> dict[str, float]:
    """One step over fresh copies of the documents: pages/s after the first page, the start, CPU, kept, timeouts."""
    from datatrove.data import Document

    marks: dict[str, float] = {}

    def feed() -> Iterator[Any]:
        for i, d in enumerate(docs):
            if i == 1:  # the first page is done: the sandbox has started and the extractor is built
                marks["first"] = time.perf_counter()
            yield Document(text=d.text, id=d.id, metadata=dict(d.metadata))

    c0, t0 = cpu_s(), time.perf_counter()
    kept = sum(1 for _ in step.run(feed()))
    end = time.perf_counter()  # the sandbox process has been joined on leaving run(): its CPU is counted
    first = marks.get("first", end)
    timeouts = step.stats.stats["timeout"].total if "timeout" in step.stats.stats else 0
    return {"pages_per_s": (len(docs) - 1) / (end - first), "start_s": first - t0,
            "cpu_ms_per_page": 1000 * (cpu_s() - c0) / len(docs), "kept": kept, "timeouts": timeouts}


def steps(timeout: float) -> dict[str, Callable[[], Any]]:
    """The steps compared, each made anew for every run (a step's stats are its own)."""
    from datatrove.pipeline.extractors import Trafilatura

    from bodyblocks.scale.datatrove_step import BodyblocksExtractor

    return {"BodyblocksExtractor() (ensemble)": lambda: BodyblocksExtractor(timeout=timeout),
            'BodyblocksExtractor(checkpoint="fast")': lambda: BodyblocksExtractor(timeout=timeout, checkpoint="fast"),
            "datatrove Trafilatura()": lambda: Trafilatura(timeout=timeout)}


def report(result: dict[str, Any]) -> str:
    """The Markdown table of the medians, and what was run."""
    w = result["warc"]
    rows = []
    for name, runs in result["runs"].items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append(f"| {name} | {med['pages_per_s']:.1f} | {med['cpu_ms_per_page']:.1f} | {med['start_s']:.2f} | "
                    f"{int(med['kept'])} | {int(med['timeouts'])} |")
    part = f"{w['dataset']}'s {w['split'] or 'whole'} set"
    return f"""Machine: {result['machine']}; `{result['command']}`: {w['pages']} pages
({w['distinct']} distinct) of {part}, {w['html_bytes_per_page']:,} bytes of HTML a page, in one WARC
read once with datatrove's WarcReader ({w['documents']} documents); every step over the same documents,
{result['rounds']} rounds in turns, medians;
per-document timeout {result['timeout']:g} s; load average {result['load']} (the machine is shared).

| step | pages/s once started | CPU ms/page (start included) | start s | pages kept | timeouts |
|---|---|---|---|---|---|
{chr(10).join(rows)}
"""


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, root=True, pages=300, rounds=3, write=True)
    ap.add_argument("--dataset", default="dragnet", help="a dataset folder under --root (default dragnet)")
    ap.add_argument("--split", default="test", help="its split (default test; 'all': every page)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per document, every step (default 30)")
    args = ap.parse_args(argv)
    root = need_root(args.root, "benchmarks.datatrove_speed")
    with tempfile.TemporaryDirectory(prefix="bb-datatrove-speed-") as tmp:
        warc = make_warc(root, args.dataset, None if args.split == "all" else args.split, args.pages,
                         Path(tmp) / "crawl.warc.gz")
        docs = read_documents(Path(tmp))
    made = steps(args.timeout)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in made}
    names = list(made)
    load = []
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:  # who goes first rotates
            load.append(os.getloadavg()[0])
            runs[name].append(timed_run(made[name](), docs))
            print(f"round {r + 1}: {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[name][-1].items()),
                  file=sys.stderr)
    result = {"command": "python -m benchmarks.datatrove_speed " + " ".join(argv if argv is not None else
                                                                            sys.argv[1:]),
              "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
              "warc": {**warc, "documents": len(docs)}, "rounds": args.rounds, "timeout": args.timeout,
              "load": f"{min(load):.1f} to {max(load):.1f}", "runs": runs}
    text = report(result)
    print(text)
    if args.write:
        write_report(args.write, "Written by `python -m benchmarks.datatrove_speed` (its docstring says how).\n\n"
                     + text, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
