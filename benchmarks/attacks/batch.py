"""Attacks on the batch runner's reruns: `bodyblocks extract` run again and again into one output folder.

Each scenario runs the CLI as a user would (`python -m bodyblocks extract ... --extractor heuristic`, fast: these
are about inputs and outputs, not extraction) and checks report.json and the files against what a demanding user
expects:
  - resume with pages added to the input (txt, jsonl, parquet): exactly the new pages extracted, every page in
    exactly one output, report.json true;
  - the same file name from two folders into one --out (`day1/index.html.gz`, then `day2/index.html.gz`): both
    outputs kept and in report.json, and each rerun finds its page done;
  - --out IN --review three times, in every format: the outputs and review pages are never read back (2 pages
    each run);
  - a FIFO named on the command line: failed as no regular file, without hanging;
  - a gzip page with bytes after its stream (zero padding, garbage): extracted, as gzip -d and browsers read it;
  - a shard's temporary left by a killed run: gone after the resumed run;
  - a review index that cannot be written: one line naming it and the system's reason (not report.json, not
    "free space");
  - links inside --out (the lock file, the journal, a page's folder, review/ with --review): nothing written
    where they lead; the run refused with one line and exit 2, or the linked folder's page failed alone.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.hostile.content import article, norm, sentence
from bodyblocks.runtime.files import REPO_ROOT

Target = tuple[str, bool, str]
TIMEOUT_S = 120  # per run: a hang (a FIFO opened) fails its target instead of stopping the corpus


def extract(inputs: list[Path], out: Path, *flags: str) -> tuple[dict[str, Any], subprocess.CompletedProcess]:
    """`bodyblocks extract` with the heuristic extractor: report.json (empty when there is none) and the process."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--extractor", "heuristic", *flags]
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"pages": [], "totals": {}, "this_run": {}}, subprocess.CompletedProcess(cmd, 124, "", "timed out")
    try:
        return json.loads((out / "report.json").read_text(encoding="utf-8")), proc
    except (OSError, ValueError):
        return {"pages": [], "totals": {}, "this_run": {}}, proc


def pages(folder: Path, *tags: str, gz: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        data = article(tag).encode("utf-8")
        if gz:
            (folder / f"{tag}.html.gz").write_bytes(gzip.compress(data, mtime=0))
        else:
            (folder / f"{tag}.html").write_bytes(data)
    return folder


def has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def outputs(out: Path, fmt: str) -> list[tuple[str, str]]:
    """(id, text) of every page written in OUT: a file per page, or a columnar format's rows."""
    if fmt in ("jsonl", "parquet"):
        from bodyblocks.batch.columnar import read_shard

        return [(r["id"], r["text"] or "") for shard in sorted(out.glob(f"*-[0-9]*.{fmt}")) for r in read_shard(shard)]
    return [(p.relative_to(out).as_posix()[: -len(fmt) - 1], p.read_text(encoding="utf-8"))
            for p in sorted(out.rglob(f"*.{fmt}")) if "review" not in p.relative_to(out).parts
            and p.name != "report.json"]


def tail(proc: subprocess.CompletedProcess) -> str:
    return "traceback in stderr" if "Traceback" in proc.stderr else ""


def resume_adds(root: Path, fmt: str) -> Target:
    src, out = pages(root / f"add-{fmt}", "a", "b", "c", "d", "e"), root / f"add-{fmt}-out"
    extract([src], out, "--format", fmt)
    pages(src, "f", "g", "0")  # after the others, and one before them
    report, proc = extract([src], out, "--format", fmt)
    run = report.get("this_run", {})
    written = outputs(out, fmt)
    ids = sorted(i for i, _ in written)
    texts = " ".join(norm(t) for _, t in written)
    lost = [t for t in "abcdefg0" if norm(sentence(t)) not in texts]
    listed = {p["id"]: p["status"] for p in report.get("pages", [])}
    ok = ((run.get("ok"), run.get("skipped")) == (3, 5) and ids == sorted("abcdefg0") and not lost
          and listed == dict.fromkeys("abcdefg0", "ok") and not tail(proc))
    return (f"resume after 3 pages are added ({fmt}): exactly those extracted", ok,
            f"{run.get('ok')} extracted, {run.get('skipped')} skipped; {len(ids)} outputs for 8 pages"
            + (f", texts in no output: {''.join(lost)}" if lost else "") + (f", {tail(proc)}" if tail(proc) else ""))


def two_folders(root: Path, fmt: str) -> Target:
    day1, day2, out = root / f"day1-{fmt}", root / f"day2-{fmt}", root / f"days-{fmt}-out"
    for day, tag in ((day1, "index"), (day2, "index-2")):  # the same name, each its own page
        day.mkdir(parents=True)
        (day / "index.html.gz").write_bytes(gzip.compress(article(tag).encode("utf-8"), mtime=0))
    extract([day1], out, "--format", fmt)
    report, proc = extract([day2], out, "--format", fmt)
    texts = " ".join(norm(t) for _, t in outputs(out, fmt))
    kept = [d for d, tag in (("day1", "index"), ("day2", "index-2")) if norm(sentence(tag)) in texts]
    listed = sorted(p["id"] for p in report.get("pages", []))
    skips = [extract([d], out, "--format", fmt)[0].get("this_run", {}).get("skipped") for d in (day1, day2)]
    ok = kept == ["day1", "day2"] and len(listed) == 2 and skips == [1, 1] and not tail(proc)
    return (f"same name from two folders into one --out ({fmt}): both kept", ok,
            f"outputs of {', '.join(kept) or 'neither'}; report.json ids {listed}; reruns skip {skips}")


def out_in_review(root: Path, fmt: str) -> Target:
    src = pages(root / f"outin-{fmt}", "again-a", "again-b")
    counts, crashed = [], False
    for _ in range(3):
        report, proc = extract([src], src, "--format", fmt, "--review", "1")
        counts.append(report.get("totals", {}).get("pages"))
        crashed |= bool(tail(proc))
    return (f"--out IN --review, three runs ({fmt}): nothing read back", counts == [2, 2, 2] and not crashed,
            " -> ".join(map(str, counts)) + " pages" + (", traceback in stderr" if crashed else ""))


def fifo(root: Path) -> Target:
    if not hasattr(os, "mkfifo"):
        return ("a FIFO on the command line: not a regular file", True, "no FIFOs here (not POSIX)")
    path = root / "pipe.html"
    os.mkfifo(path)
    report, proc = extract([path], root / "fifo-out")
    errors = [p.get("error") or "" for p in report.get("pages", [])]
    ok = proc.returncode == 1 and len(errors) == 1 and errors[0].startswith("not-a-file:") and "FIFO" in errors[0]
    return ("a FIFO on the command line: not a regular file, no hang", ok,
            f"exit {proc.returncode}: {errors[0] if errors else 'no page line'}")


def gzip_trailing(root: Path) -> Target:
    src = root / "gz-tail"
    src.mkdir()
    body = gzip.compress(article("gz-pad").encode("utf-8"), mtime=0)
    (src / "padded.html.gz").write_bytes(body + b"\0" * 4096)
    body = gzip.compress(article("gz-junk").encode("utf-8"), mtime=0)
    (src / "junk.html.gz").write_bytes(body + b"\n<!-- trailing log line -->\n")
    report, proc = extract([src], root / "gz-tail-out")
    status = {p["id"]: p["status"] if p["status"] == "ok" else p.get("error") for p in report.get("pages", [])}
    texts = " ".join(norm(t) for _, t in outputs(root / "gz-tail-out", "txt"))
    ok = status == {"junk": "ok", "padded": "ok"} and all(norm(sentence(t)) in texts for t in ("gz-pad", "gz-junk"))
    return ("gzip with bytes after its stream: read as gzip -d reads it", ok, json.dumps(status)[:120])


def stale_temporary(root: Path) -> Target:
    src, out = pages(root / "tmp-in", "a"), root / "tmp-out"
    extract([src], out, "--format", "jsonl")
    stale = out / ".tmp-in-00001.jsonl.4194303.tmp"  # what a run killed with -9 leaves
    stale.write_text('{"id": "half a row', encoding="utf-8")
    report, proc = extract([src], out, "--format", "jsonl")
    ok = not stale.exists() and report.get("this_run", {}).get("skipped") == 1 and not tail(proc)
    return ("a killed run's shard temporary: removed on resume", ok,
            "removed" if not stale.exists() else f"still there: {stale.name}")


def review_index_unwritable(root: Path) -> Target:
    src, out = pages(root / "rv-in", "a"), root / "rv-out"
    (out / "review" / "index.html").mkdir(parents=True)  # no write can make it (read-only is no bar to root)
    _, proc = extract([src], out, "--review", "1")
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bodyblocks extract: cannot")]
    line = lines[0] if lines else proc.stderr.strip()[-160:]
    ok = (proc.returncode == 1 and len(lines) == 1 and str(out / "review" / "index.html") in line
          and "report.json" not in line and "free space" not in line and not tail(proc))
    return ("a review index that cannot be written: named, with its reason", ok, f"exit {proc.returncode}: "
            + line.replace(str(root), "ROOT")[:140])


LINKS = {  # what stands in --out: a link to the folder or file outside
    ".bodyblocks.lock": "refused", "report.pages.jsonl": "refused", "sub": "page fails", "review": "refused"}


def link_in_out(root: Path, name: str) -> Target:
    src, out, outside = pages(root / "ln-in", "a"), root / f"ln-out-{name.strip('.')}", root / f"ln-to-{name}"
    pages(src / "sub", "b")
    outside.mkdir()
    (outside / "file").write_text("precious\n", encoding="utf-8")
    out.mkdir()
    (out / name).symlink_to(outside if LINKS[name] == "page fails" or name == "review" else outside / "file")
    report, proc = extract([src], out, *(["--review", "1"] if name == "review" else []))
    kept = [p.name for p in outside.iterdir()] == ["file"] and (outside / "file").read_text() == "precious\n"
    err = [ln for ln in [*proc.stderr.splitlines(), *(p.get("error") or "" for p in report.get("pages", []))]
           if "symbolic link" in ln]
    if LINKS[name] == "refused":
        ok = proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and len(err) == 1
    else:
        status = {p["id"]: p["status"] for p in report.get("pages", [])}
        ok = status == {"a": "ok", "sub/b": "failed"} and proc.returncode == 1
    return (f"--out/{name} a link out of --out: nothing written there, {LINKS[name]}", ok and kept and not tail(proc),
            f"exit {proc.returncode}; outside {'untouched' if kept else 'WRITTEN'}; "
            + (err[0].replace(str(root), "ROOT")[:100] if err else proc.stderr.strip()[-100:]))


def scenarios(root: Path) -> list[Target]:
    """Every scenario of this module, each in a folder of its own under ROOT."""
    root = root.resolve()
    columnar = ["jsonl", *(["parquet"] if has_pyarrow() else [])]
    targets = [resume_adds(root, fmt) for fmt in ("txt", *columnar)]
    targets += [two_folders(root, fmt) for fmt in ("txt", "jsonl")]
    targets += [out_in_review(root, fmt) for fmt in ("txt", "json", "md", *columnar)]
    targets += [fifo(root), gzip_trailing(root), stale_temporary(root), review_index_unwritable(root)]
    if hasattr(os, "symlink"):
        targets += [link_in_out(root, name) for name in LINKS]
    return targets
