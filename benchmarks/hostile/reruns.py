"""Scenarios that need more than one run of the CLI on the same inputs (the heuristic extractor: they
are about inputs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.hostile.content import article, norm, sentence
from bodyblocks.runtime.files import REPO_ROOT


def extract_again(inputs: list[Path], out: Path, *flags: str) -> tuple[dict[str, Any], str]:
    """`bodyblocks extract` with the heuristic extractor (the reruns are about inputs): report.json and stderr."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", *map(str, inputs), "--out", str(out), "--no-progress",
           "--extractor", "heuristic", *flags]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, errors="replace", timeout=300)
    try:
        return json.loads((out / "report.json").read_text(encoding="utf-8")), proc.stderr
    except (OSError, ValueError):
        return {"pages": [], "totals": {}}, proc.stderr


def reruns(root: Path) -> list[tuple[str, bool, str]]:
    """Targets of the scenarios that need more than one run: --out inside the input folder, and a resume after a
    record with a duplicate id is put before the old one. (--out the input folder itself, in every format, is
    benchmarks/attacks/batch.py's.)"""
    src = root / "in"
    src.mkdir(parents=True)
    for tag in ("again-a", "again-b"):
        (src / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    counts, crashed = [], False
    for _ in range(3):  # review pages (out/review/...html) read back as inputs made it 2 -> 5 -> 8
        report, err = extract_again([src], src / "out", "--review", "1")
        counts.append(report.get("totals", {}).get("pages"))
        crashed |= "Traceback" in err
    targets = [("--out inside the input: never read back", counts == [2, 2, 2] and not crashed,
                " -> ".join(map(str, counts)) + " pages" + (", traceback in stderr" if crashed else ""))]

    ds, out = root / "dataset", root / "out-dataset"
    (ds / "html").mkdir(parents=True)
    for tag in ("dup-old", "dup-new", "dup-other"):
        (ds / "html" / f"{tag}.html").write_text(article(tag), encoding="utf-8")
    old, other = {"id": "dup", "html": "html/dup-old.html"}, {"id": "other", "html": "html/dup-other.html"}
    (ds / "pages.jsonl").write_text(f"{json.dumps(old)}\n{json.dumps(other)}\n", encoding="utf-8")
    _, err1 = extract_again([ds], out)
    new = {"id": "dup", "html": "html/dup-new.html"}  # put before the old record with the same id
    (ds / "pages.jsonl").write_text(f"{json.dumps(new)}\n{json.dumps(old)}\n{json.dumps(other)}\n", encoding="utf-8")
    report, err2 = extract_again([ds], out)
    written = " ".join(norm(p.read_text(encoding="utf-8")) for p in out.rglob("*.txt"))
    lost = [tag for tag in ("dup-old", "dup-new", "dup-other") if norm(sentence(tag)) not in written]
    pages = report.get("totals", {}).get("pages")
    crashed = "Traceback" in err1 + err2
    targets.append(("resume after a duplicate id put first: no page lost", not lost and pages == 3 and not crashed,
                     f"{pages} pages, {len(lost)} texts in no output" + (f" ({', '.join(lost)})" if lost else "")
                     + (", traceback in stderr" if crashed else "")))
    return targets
