"""Hostile inputs to `bodyblocks extract`, run end to end: every page accounted for, with the right reason.

    python -m benchmarks.hostile_corpus                          # the default extractor (the ensemble)
    python -m benchmarks.hostile_corpus --extractor gbt --workers 2
    python -m benchmarks.hostile_corpus --out /tmp/hostile --keep

Builds, in a temporary folder (or --out, which must be empty or absent), an input folder of hostile files
(a gzip bomb that inflates to more than 1 GB, corrupt gzip, binary junk, empty pages, NUL bytes, UTF-16/32,
charsets no page is written in, mislabelled GBK, 100,000-deep nesting, a page over the segmenter's size
limit, 300,000 blocks, broken markup, hostile file names, dangling links, a FIFO, a socket, a folder loop, an
unreadable folder) mixed with ~20 good article pages that each hold a known, numbered sentence, and a dataset
folder (pages.jsonl + html/) whose records try to escape (ids `../escape`, `/abs/path`, `sub/../../x`, html
paths `../../../../etc/passwd`, a link out of the folder), are not JSON or have no id, and a URL list of lines
that are no http(s) URL (`file:///etc/passwd`, a line that is not UTF-8). The input side adds links
out of the input folder (`passwd.html -> /etc/passwd`, `sub/shadow.htm -> /etc/shadow`: never read), a folder
1,100 levels deep, ids of 1,500 segments and of 4,800 bytes, a record of 100,000 nested `[`, and ids that
collide as file and folder (`col`, `col.txt/inner`). Then it runs

    bodyblocks extract IN DATASET URLS --out OUT --no-progress [--extractor NAME] [--workers N]

under GNU time (`/usr/bin/time -v`) with a wall-clock limit and checks report.json against what each input
should become (ok, with its sentence in its output; or failed, with its reason), that nothing was written
outside OUT, that no output lies outside it, the exit status (1: some pages fail), the peak RSS (GNU time's
"Maximum resident set size": the largest single process, workers included, not their sum) against 1.5 GiB
and the slowest page's seconds against the page time limit (--page-timeout; the CLI's default is 60 s).
Every hostile case that is mishandled is printed. Two more scenarios are run again and again with the heuristic
extractor (fast; they are about inputs): --out inside the input folder with --review (the outputs and review
pages must never be read back: 2 pages each run), and a resume after a record with a duplicate id is put before
the old one in pages.jsonl (no page may be "skipped" with its text in no output). The last lines are one verdict
per target, and the exit status is 1 when a target is not met.

Disk: about 20 MB (the bomb is ~1 MB on disk; the 100 MB file is sparse). Run it under `nice` on a shared
machine: the bomb takes a few seconds of CPU to build, the default extractor a few minutes to run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.attacks import all_scenarios
from benchmarks.common import arguments
from benchmarks.hostile.folders import entries, remove_deep, snapshot
from benchmarks.hostile.inputs import Corpus
from benchmarks.hostile.judge import leaks, match, outcome, report_table
from benchmarks.hostile.other_attacks import other_attacks
from benchmarks.hostile.reruns import reruns
from bodyblocks.runtime.files import REPO_ROOT

RSS_TARGET_KIB = 1536 * 1024  # 1.5 GiB
WALL_TIMEOUT_S = 900
GNU_TIME = "/usr/bin/time"


@dataclass
class RunResult:
    cmd: list[str]
    status: int | None  # None: killed at the wall-clock limit
    stderr: str
    wall_s: float
    rss_kib: int | None


def run_cli(inputs: list[Path], out: Path, args: argparse.Namespace, timefile: Path) -> RunResult:
    cli = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--page-timeout", str(args.page_timeout)]
    if args.extractor:
        cli += ["--extractor", args.extractor]
    if args.workers is not None:
        cli += ["--workers", str(args.workers)]
    gnu = os.access(GNU_TIME, os.X_OK)
    cmd = [GNU_TIME, "-v", "-o", str(timefile), *cli] if gnu else cli
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    try:
        _, err = proc.communicate(timeout=args.timeout)
        status: int | None = proc.returncode
    except subprocess.TimeoutExpired:  # SIGTERM first: the run stops with an "interrupted" report.json
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        status = None
    wall = time.perf_counter() - start
    rss = None
    if gnu and timefile.exists():
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", timefile.read_text(errors="replace"))
        rss = int(m.group(1)) if m else None
    return RunResult(cmd, status, err, wall, rss)



def main() -> int:
    ap = arguments(__doc__)
    ap.add_argument("--out", type=Path, default=None, help="build and run here (kept); default: a temp folder")
    ap.add_argument("--extractor", default=None, help="default: the CLI's default (the ensemble)")
    ap.add_argument("--workers", type=int, default=None, help="parsing processes (default: the CLI's, 1)")
    ap.add_argument("--page-timeout", type=int, default=60, help="the CLI's --page-timeout; the slowest-page target")
    ap.add_argument("--timeout", type=float, default=WALL_TIMEOUT_S, help="wall-clock limit of the whole run (s)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        if any(args.out.iterdir()):
            ap.error(f"--out {args.out} is not empty (an earlier run's outputs would be resumed)")
        root = args.out.resolve()
    else:
        root = Path(tempfile.mkdtemp(prefix="bb-hostile-")).resolve()
    corpus = Corpus(root)
    try:
        return run(corpus, args)
    finally:
        corpus.unlock()
        if args.out is None and not args.keep:
            if (root / "in" / "deep").exists():
                remove_deep(root / "in" / "deep")
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"(kept {root})")


def run(corpus: Corpus, args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    corpus.build()
    root, out = corpus.root, corpus.root / "out"
    cases = corpus.cases
    disk = sum(st.st_blocks * 512 for _, st in entries(root))
    print(f"corpus: {len(cases)} inputs ({sum(c.good for c in cases)} good pages, "
          f"{sum(not c.good for c in cases)} hostile) in {root}, {disk / 2**20:.1f} MiB on disk, built in "
          f"{time.perf_counter() - t0:.0f} s")
    before = snapshot(root, out)
    res = run_cli([corpus.src, corpus.ds, corpus.urls], out, args, root / "time.txt")
    after = snapshot(root, out)
    after.pop(b"time.txt", None)
    print("command: " + " ".join(a if re.fullmatch(r"[\w/.:=+-]+", a) else repr(a) for a in res.cmd))
    state = "killed at the wall-clock limit" if res.status is None else f"exit status {res.status}"
    print(f"{state} after {res.wall_s:.0f} s; peak RSS "
          f"{'unknown' if res.rss_kib is None else f'{res.rss_kib / 1024:.0f} MiB'}")
    err_lines = res.stderr.strip().splitlines()
    print("stderr" + (f" (last 25 of {len(err_lines)} lines)" if len(err_lines) > 25 else "") + ":")
    for line in err_lines[-25:]:
        print(f"  | {line}")

    report_path = out / "report.json"
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"\nno usable report.json: {exc}")
        report = {"pages": [], "totals": {}, "status": "missing"}
    lines = report.get("pages", [])
    found, stray = match(cases, lines)
    summary = report_table(cases, found, out)
    if stray:
        print(f"\nreport lines no input accounts for ({len(stray)}):")
        for line in stray[:20]:
            print(f"  - id {line.get('id')!r} input {line.get('input')!r}: {outcome(line)}")

    expected_pages = sum(c.must_report for c in cases)
    accounted = sum(1 for i, c in enumerate(cases) if c.must_report and found[i])
    once = all(len(found[i]) <= 1 for i in range(len(cases)))
    written = sorted(set(after) - set(before)) + sorted(k for k in before if k in after and after[k] != before[k])
    gone = sorted(set(before) - set(after))
    leak = leaks(out, lines)
    slowest = max(lines, key=lambda line: line.get("seconds") or 0, default=None)
    slow_s = (slowest or {}).get("seconds") or 0.0
    totals = report.get("totals", {})

    print(f"\nreport.json: status {report.get('status')}, {totals.get('pages')} pages, {totals.get('ok')} ok, "
          f"{totals.get('failed')} failed, {totals.get('truncated')} truncated; reasons {totals.get('reasons')}")
    print(f"pages accounted for: {accounted} of {expected_pages} expected; {len(lines)} report lines "
          f"({len(stray)} unclaimed)")
    print(f"good pages extracted (sentence in output): {summary['good_ok']} of {summary['good']}")
    print(f"hostile cases as expected: {summary['hostile_ok']} of {summary['hostile']}")
    print(f"written outside --out: {len(written)} changed/new, {len(gone)} removed")
    for k in (written + gone)[:10]:
        print(f"  - {os.fsdecode(k)!r}")
    for p in leak[:10]:
        print(f"  - {p}")
    if slowest:
        print(f"slowest page: {slowest.get('id')!r} {slow_s:.1f} s ({outcome(slowest)})")
        shared: dict[float, int] = {}
        for line in lines:
            if line.get("status") == "ok" and (line.get("seconds") or 0) >= 0.5:
                key = round(line["seconds"], 1)  # a group's share, plus each page's own parse time
                shared[key] = shared.get(key, 0) + 1
        if any(n > 1 for n in shared.values()):
            print(f"  (caution: {sum(n for n in shared.values() if n > 1)} ok pages share their seconds (to 0.1 s) "
                  "with others: pages classified together report the group's time split evenly, so one slow page "
                  "in a group shows less than it took)")

    crashed = "Traceback" in res.stderr
    targets = [
        ("run finished inside the wall limit, no traceback", res.status is not None and not crashed,
         state + (", traceback in stderr" if crashed else "")),
        ("every input accounted for, once", accounted == expected_pages and once and not stray and
         totals.get("pages") == len(lines), f"{accounted}/{expected_pages}, {len(stray)} unclaimed"),
        ("every hostile case handled as expected", summary["hostile_ok"] == summary["hostile"],
         f"{summary['hostile_ok']}/{summary['hostile']}"),
        ("every good page extracted", summary["good_ok"] == summary["good"], f"{summary['good_ok']}/{summary['good']}"),
        ("nothing written outside --out", not written and not gone, f"{len(written) + len(gone)} entries"),
        ("no output file outside --out", not leak, f"{len(leak)} problems"),
        ("exit status 1 (some pages fail)", res.status == 1, str(res.status)),
        ("peak RSS <= 1.5 GiB", res.rss_kib is not None and res.rss_kib <= RSS_TARGET_KIB,
         "unknown" if res.rss_kib is None else f"{res.rss_kib / 1024:.0f} MiB"),
        (f"slowest page <= page timeout ({args.page_timeout} s)", slowest is not None and slow_s <= args.page_timeout,
         f"{slow_s:.1f} s, {(slowest or {}).get('id')!r}"),
        *other_attacks(root / "other"),  # review, annotate, checkpoints, Ctrl-C
        *reruns(root / "again"),
        *all_scenarios(root / "attacks"),  # benchmarks/attacks/*.py
    ]
    print("\ntargets:")
    for label, met, detail in targets:
        print(f"  {label:52} {'met' if met else 'NOT MET':8} ({detail})")
    return 0 if all(met for _, met, _ in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
