"""Merge the per-(dataset, extractor) reports of benchmarks/run_evaluation.sh into one set of tables.

Reads OUT/<dataset>/<extractor>/report.json (+ pages.csv, and the command from report.md) and writes:
  OUT/summary.md    extractor x dataset table (Chinese pages of a multilingual dataset as their own row,
                    e.g. "daniel-zh"), the per-language table, the target check (each
                    trained extractor vs trafilatura and readability in token F1 and acc@0.90), the
                    lowest-ratio test pages of each trained extractor, and the command of every run;
  OUT/summary.json  the merged summary rows;
  OUT/accuracy.png  accuracy against threshold, one panel per dataset.
Every figure comes from the reports; nothing is typed in by hand.

    python -m benchmarks.evaluation_summary benchmarks/results/evaluation --real cleaneval-en daniel ...
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from benchmarks.common import arguments
from bodyblocks.evaluation.evaluate import ALL
from bodyblocks.evaluation.report import format_table, plot_accuracy, write_json
from bodyblocks.runtime.files import write_atomic

CJK_LANG = "zh"  # split out of a multilingual dataset as its own row
PEERS = ("trafilatura", "readability")  # the target: beat both
CONTENDERS = ("ensemble", "model", "gbt")  # trained extractors checked against the target
WORST = 3  # lowest-ratio pages listed per contender and test split


def load_reports(out: Path) -> list[dict[str, Any]]:
    """Every report.json under OUT/<dataset>/<extractor>/, with its folder."""
    reports = []
    for path in sorted(out.glob("*/*/report.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        report["_dir"] = path.parent
        reports.append(report)
    return reports


def merged_rows(reports: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(dataset rows with Chinese split out as '<dataset>-zh', per-language rows) over all reports."""
    rows, by_lang = [], []
    for report in reports:
        summary = [r for r in report["summary"] if r["dataset"] != ALL]
        langs = {r["lang"] for r in summary if r["lang"] != ALL}
        for r in summary:
            if r["lang"] == ALL:
                rows.append(r)
            else:
                by_lang.append(r)
                if r["lang"] == CJK_LANG and len(langs) > 1:
                    rows.append({**r, "dataset": f"{r['dataset']}-{CJK_LANG}", "lang": ALL})
    return rows, by_lang


def _fmt(value: float | None) -> str:
    """Three decimals (counts as they are), '-' when missing."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def pivot(rows: list[dict[str, Any]], key: str, bold: bool = True) -> list[str]:
    """Markdown lines: one figure as dataset rows x extractor columns (best of each row in bold)."""
    extractors = sorted({r["extractor"] for r in rows}, key=lambda e: (e not in CONTENDERS, e))
    datasets = sorted({r["dataset"] for r in rows if r.get(key) is not None})
    index = {(r["dataset"], r["extractor"]): r.get(key) for r in rows}
    lines = ["| dataset | " + " | ".join(extractors) + " |", "|" + "---|" * (1 + len(extractors))]
    for ds in datasets:
        values = [index.get((ds, e)) for e in extractors]
        best = max((v for v in values if v is not None), default=None) if bold else None
        cells = [f"**{_fmt(v)}**" if v is not None and v == best else _fmt(v) for v in values]
        lines.append(f"| {ds} | " + " | ".join(cells) + " |")
    return lines


def _versus(mine: float, best: float) -> str:
    """'>' / '=' / '<' of a figure against the better peer's (equal at three decimals counts as '=')."""
    if round(mine, 3) == round(best, 3):
        return "="
    return ">" if mine > best else "<"


def target_table(rows: list[dict[str, Any]], real: set[str], contender: str) -> list[str]:
    """Markdown lines: per full-gold test split, the contender's token F1 and acc@0.90 against the peers."""
    index = {(r["extractor"], r["dataset"]): r for r in rows}
    datasets = sorted({ds for _, ds in index if ds in real or ds.removesuffix(f"-{CJK_LANG}") in real})
    head = f"| dataset | {contender} tokF1 | " + " | ".join(f"{p} tokF1" for p in PEERS)
    head += f" | {contender} @0.90 | " + " | ".join(f"{p} @0.90" for p in PEERS)
    lines = [head + " | vs better peer: tokF1, @0.90 |", "|" + "---|" * (4 + 2 * len(PEERS))]
    for ds in datasets:
        mine = index.get((contender, ds))
        peers = [index[(p, ds)] for p in PEERS if (p, ds) in index]
        if mine is None or len(peers) < len(PEERS) or mine.get("token_f1") is None:
            continue
        cells = []
        for key in ("token_f1", "acc@0.90"):
            cells += [_fmt(mine[key]), *(_fmt(p[key]) for p in peers)]
        verdict = ", ".join(_versus(mine[k], max(p[k] for p in peers)) for k in ("token_f1", "acc@0.90"))
        lines.append(f"| {ds} | " + " | ".join(cells) + f" | {verdict} |")
    return lines if len(lines) > 2 else []


def bar_table(rows: list[dict[str, Any]], real: set[str]) -> list[str]:
    """Markdown lines: the target per full-gold test split, the better peer's token F1 and acc@0.90."""
    index = {(r["extractor"], r["dataset"]): r for r in rows}
    lines = ["| dataset | token F1 to beat | by | acc@0.90 to beat | by |", "|---|---|---|---|---|"]
    for ds in sorted({ds for _, ds in index if ds in real or ds.removesuffix(f"-{CJK_LANG}") in real}):
        peers = [(p, index[(p, ds)]) for p in PEERS if (p, ds) in index]
        if len(peers) < len(PEERS) or peers[0][1].get("token_f1") is None:
            continue
        cells = []
        for key in ("token_f1", "acc@0.90"):
            name, row = max(peers, key=lambda pr: pr[1][key])
            cells += [_fmt(row[key]), name]
        lines.append(f"| {ds} | " + " | ".join(cells) + " |")
    return lines if len(lines) > 2 else []


def _status(row: dict[str, str]) -> str:
    """A page's status cell: ok / failed (reason), with 'no body' when the extractor declined."""
    cell = row["status"] + (f" ({row['reason']})" if row["reason"] else "")
    return cell + (", no body" if row["no_body"] == "1" else "")


def worst_pages(reports: list[dict[str, Any]], real: set[str], extractor: str, n: int) -> list[str]:
    """Markdown lines: the extractor's n lowest-ratio pages of each full-gold test split (and its Chinese pages)."""
    groups: dict[str, list[dict[str, str]]] = {}
    for report in reports:
        folder = report["_dir"]
        if folder.name != extractor or folder.parent.name not in real:
            continue
        with open(folder / "pages.csv", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row["ratio"]:
                    groups.setdefault(row["dataset"], []).append(row)
                    if row["lang"] == CJK_LANG:
                        groups.setdefault(f"{row['dataset']}-{CJK_LANG}", []).append(row)
    lines = ["| split | id | lang | ratio | tokP | tokR | gold chars | pred chars | status |", "|" + "---|" * 9]
    for split in sorted(groups):
        if split.endswith(f"-{CJK_LANG}") and len({r["lang"] for r in groups[split.rsplit("-", 1)[0]]}) < 2:
            continue  # a Chinese-only dataset needs no second list
        for row in sorted(groups[split], key=lambda row: (float(row["ratio"]), -int(row["gold_chars"])))[:n]:
            cells = [split, row["id"], row["lang"], _fmt(float(row["ratio"])), _fmt(float(row["token_precision"])),
                     _fmt(float(row["token_recall"])), row["gold_chars"], row["pred_chars"], _status(row)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines if groups else []


def run_command(report_md: Path) -> str:
    """The command line that `bodyblocks evaluate` recorded in its report.md."""
    if report_md.is_file():
        for line in report_md.read_text(encoding="utf-8").splitlines():
            if line.startswith("    bodyblocks "):
                return line.strip()
    return f"(no command recorded in {report_md})"


def commands(reports: list[dict[str, Any]]) -> list[str]:
    """The command of every run, with its wall time."""
    lines = []
    for report in reports:
        cmd = run_command(report["_dir"] / "report.md")
        wall = sum(note.get("wall_s", 0.0) for note in report["selection"].values())
        lines.append(f"    {cmd}    # {wall:.0f} s")
    return lines


def selection(reports: list[dict[str, Any]]) -> list[str]:
    """One line per dataset: pages evaluated out of the split and how the split was chosen."""
    seen: dict[str, str] = {}
    for report in reports:
        for name, note in report["selection"].items():
            how = f"split {note['split']} ({note.get('split_source')})" if note.get("split") else "all pages"
            seen.setdefault(name, f"- {name}: {note['pages']} of {note['pages_in_split']} pages, {how}")
    return list(seen.values())


def summary_markdown(reports: list[dict[str, Any]], rows: list[dict[str, Any]], by_lang: list[dict[str, Any]],
                     real: set[str]) -> str:
    """The whole summary page."""
    parts = ["# Evaluation summary (generated by benchmarks/evaluation_summary.py)", "",
             "## Token F1 (dataset x extractor)", "", *pivot(rows, "token_f1"), "",
             "## Mean Levenshtein ratio (dataset x extractor)", "", *pivot(rows, "mean_ratio"), "",
             "## Accuracy at ratio >= 0.90 (dataset x extractor)", "", *pivot(rows, "acc@0.90"), "",
             "## Snippet F1 (datasets with must/must-not snippets)", "", *pivot(rows, "snippet_f1"), "",
             "## Pages answered with no body (dataset x extractor)",
        "",
        *pivot(rows, "no_body", bold=False),
        "",
        "## Extractor x dataset, every figure", "", format_table(rows, markdown=True), "",
             "## Per language", "", format_table(by_lang, by_lang=True, markdown=True), ""]
    bar = bar_table(rows, real)
    if bar:
        parts += [f"## Target bar: the better of {' and '.join(PEERS)} per test split", "", *bar, ""]
    for contender in CONTENDERS:
        table = target_table(rows, real, contender)
        if table:
            parts += [f"## Target check: {contender} vs {' and '.join(PEERS)}", "", *table, ""]
        worst = worst_pages(reports, real, contender, WORST)
        if worst:
            parts += [f"## Lowest-ratio test pages of {contender} ({WORST} per split)", "", *worst, ""]
    parts += ["## Selection", "", *selection(reports), "", "## Commands", "", *commands(reports), ""]
    return "\n".join(parts)


def tables_by_title(summary: str) -> dict[str, list[str]]:
    """The first Markdown table under each `## title` of summary.md."""
    out: dict[str, list[str]] = {}
    title = None
    for line in summary.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        elif title is not None and line.startswith("|"):
            out.setdefault(title, []).append(line)
        elif title is not None and title in out:
            title = None  # the table ended
    return out


def sync_doc(doc: str, tables: dict[str, list[str]]) -> tuple[str, list[str]]:
    """`doc` with each table under a bold title (`**Token F1 (dataset x extractor)**`) that names a section of
    summary.md replaced by that section's table (the prose around it left alone); and the titles replaced."""
    lines = doc.splitlines()
    out: list[str] = []
    done: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        title = line[2:-2] if line.startswith("**") and line.endswith("**") else None
        if title not in tables:
            continue
        while i < len(lines) and not lines[i].startswith("|"):  # blank lines between title and table
            out.append(lines[i])
            i += 1
        while i < len(lines) and lines[i].startswith("|"):  # the old table
            i += 1
        out.extend(tables[title])
        done.append(title)
    return "\n".join(out) + "\n", done


def main() -> int:
    """Merge the reports under OUT and write summary.md, summary.json and accuracy.png; with --doc, its tables."""
    parser = arguments(__doc__)
    parser.add_argument("out", type=Path, help="the folder run_evaluation.sh wrote (benchmarks/results/evaluation)")
    parser.add_argument("--real", nargs="+", default=[], help="datasets whose test split the target covers")
    parser.add_argument("--doc", type=Path, default=None,
                        help="copy summary.md's tables into this manual page (docs/EVALUATION.md): only the "
                             "tables under a bold title that names a section of summary.md")
    args = parser.parse_args()
    reports = load_reports(args.out)
    if not reports:
        print(f"no reports under {args.out}")
        return 1
    rows, by_lang = merged_rows(reports)
    write_json({"summary": rows, "by_lang": by_lang}, args.out / "summary.json")
    plot_accuracy(rows, args.out / "accuracy.png")
    (args.out / "summary.md").write_text(summary_markdown(reports, rows, by_lang, set(args.real)), encoding="utf-8")
    print(format_table(rows))
    print(f"wrote {args.out / 'summary.md'}, summary.json, accuracy.png from {len(reports)} reports")
    if args.doc:
        text, done = sync_doc(args.doc.read_text(encoding="utf-8"),
                              tables_by_title((args.out / "summary.md").read_text(encoding="utf-8")))
        write_atomic(args.doc, text)
        print("\n".join(f"updated {args.doc}: {t}" for t in done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
