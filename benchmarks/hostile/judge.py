"""The run's report lines matched to the cases and judged: every input accounted for, with the
right outcome, its sentence in its output, and no output outside --out."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from benchmarks.hostile.cases import Case
from benchmarks.hostile.content import CANARY, clip, norm

PASSWD_MARK = re.compile(r"^root:[^:]*:0:0:", re.MULTILINE)


def outcome(line: dict[str, Any]) -> str:
    if line.get("status") == "ok":
        return "ok"
    return f"{line.get('status')}:{str(line.get('error') or '').split(':', 1)[0]}"


def accepted(got: str, expect: tuple[str, ...]) -> str | None:
    """The expected outcome `got` matches, or None."""
    for e in expect:
        if e == got or (e == "failed:*" and got.startswith("failed:")):
            return e
    return None


def match(cases: list[Case], lines: list[dict[str, Any]]) -> tuple[dict[int, list[dict[str, Any]]], list[dict]]:
    """The report lines of each case (by index): by input path, else by id, else by the pages.jsonl line number
    in the error; and the lines no case claims."""
    by_input = {os.path.normpath(c.path): i for i, c in enumerate(cases) if c.path}
    under = [(os.path.normpath(c.path) + os.sep, i) for i, c in enumerate(cases) if c.path and c.under]
    by_id = {c.rec_id: i for i, c in enumerate(cases) if c.rec_id}
    by_line = {c.line_no: i for i, c in enumerate(cases) if c.line_no}
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(cases))}
    stray = []
    for line in lines:
        source = os.path.normpath(line["input"]) if line.get("input") else None
        m = re.search(r"pages\.jsonl line (\d+)", str(line.get("error") or ""))
        inside = [i for prefix, i in under if source and source.startswith(prefix)]
        if source in by_input:
            found[by_input[source]].append(line)
        elif inside:
            found[inside[0]].append(line)
        elif line.get("id") in by_id:
            found[by_id[line["id"]]].append(line)
        elif m and int(m.group(1)) in by_line and not source:
            found[by_line[int(m.group(1))]].append(line)
        else:
            stray.append(line)
    return found, stray


def read_output(out: Path, line: dict[str, Any]) -> tuple[str | None, str | None]:
    """The page's output text, and a problem with where it lies or what it holds."""
    target = line.get("output")
    if not target:
        return None, "ok without an output file"
    path = Path(target)
    if not path.resolve().is_relative_to(out.resolve()):
        return None, f"output outside --out: {target}"
    try:
        return path.read_bytes().decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"output is not valid UTF-8 ({exc})"
    except OSError as exc:
        return None, f"output unreadable: {exc}"


def judge(case: Case, lines: list[dict[str, Any]], out: Path) -> tuple[str, str, list[str]]:
    """(what the report says, verdict, problems) for one case."""
    if not lines:
        if not case.must_report:
            return "absent", "as expected" if case.expect[0] == "absent" else "as expected (alt)", []
        return "MISSING", "MISHANDLED", ["not in report.json: the page was lost"]
    if case.expect == ("absent",):
        return f"{len(lines)} lines", "MISHANDLED", [f"walked into: {line.get('input')}" for line in lines[:3]]
    problems = [f"accounted {len(lines)} times"] if len(lines) > 1 else []
    line = lines[0]
    got = outcome(line)
    said = got if got != "ok" else f"ok {line.get('chars')} chars {line.get('encoding')}"
    hit = accepted(got, case.expect)
    if hit is None:
        detail = f": {line.get('error')}" if line.get("error") else ""
        problems.append(f"expected {' or '.join(case.expect)}, got {got}{detail}")
    if got == "ok":
        text, problem = read_output(out, line)
        if problem:
            problems.append(problem)
        if case.sentence and text is not None and norm(case.sentence) not in norm(text):
            problems.append("its known sentence is not in its output")
        for label, check in case.checks:
            issue = check(line, text)
            if issue:
                problems.append(f"{label}: {issue}")
    verdict = "MISHANDLED" if problems else "as expected" if hit == case.expect[0] else "as expected (alt)"
    return said, verdict, problems



def report_table(cases: list[Case], found: dict[int, list[dict[str, Any]]], out: Path) -> dict[str, Any]:
    rows = []
    for i, c in enumerate(cases):
        said, verdict, problems = judge(c, found[i], out)
        rows.append((c, said, verdict, problems, found[i][0] if found[i] else None))
    print(f"\n{'#':>3} {'input':46} {'expected':34} {'report.json says':34} {'s':>7}  verdict")
    for n, (c, said, verdict, _, line) in enumerate(rows, 1):
        secs = f"{line.get('seconds', 0):.2f}" if line else ""
        print(f"{n:3d} {clip(c.name, 46):46} {clip(' | '.join(c.expect), 34):34} {clip(said, 34):34} {secs:>7}  "
              f"{verdict}")
    bad = [(c, p) for c, _, v, p, _ in rows if v == "MISHANDLED"]
    if bad:
        print(f"\nMISHANDLED ({len(bad)}):")
        for c, problems in bad:
            print(f"  - {c.name} [{clip(c.path or c.rec_id or f'pages.jsonl line {c.line_no}', 200)}]")
            for p in problems:
                print(f"      {p}")
    notes = [(c, verdict) for c, _, verdict, _, _ in rows if c.note]
    if notes:
        print("\nnotes:")
        for c, verdict in notes:
            print(f"  - {c.name}: {c.note} ({verdict})")
    good = [r for r in rows if r[0].good]
    return {"bad": bad, "good_ok": sum(r[2] != "MISHANDLED" for r in good), "good": len(good),
            "hostile_ok": sum(r[2] != "MISHANDLED" for r in rows if not r[0].good),
            "hostile": sum(not r[0].good for r in rows)}


def leaks(out: Path, report_lines: list[dict[str, Any]]) -> list[str]:
    """Outputs outside OUT: report lines naming one, links inside OUT, secrets in any output."""
    problems = []
    for line in report_lines:
        if line.get("output") and not Path(line["output"]).resolve().is_relative_to(out.resolve()):
            problems.append(f"report names an output outside --out: {line['output']}")
    for p in out.rglob("*"):
        if p.is_symlink() or not p.resolve().is_relative_to(out.resolve()):
            problems.append(f"{p} leads outside --out")
        elif p.name.startswith(".") and p.name.endswith(".tmp"):
            problems.append(f"{p}: a temporary file left behind")
        elif p.is_file() and p.suffix in (".txt", ".json", ".md"):
            text = p.read_text(encoding="utf-8", errors="replace")
            if CANARY in text or PASSWD_MARK.search(text):
                problems.append(f"{p} holds a file from outside the inputs (canary or /etc/passwd)")
    return problems
