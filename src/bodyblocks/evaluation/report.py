"""Evaluation outputs: the console/markdown table, report JSON, per-page CSV and accuracy-vs-threshold plot.

Kept apart from evaluate.py so that running and scoring never mix with formatting and plotting.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bodyblocks.evaluation.evaluate import ALL, PageResult
from bodyblocks.metrics import THRESHOLDS

CSV_FIELDS = (
    "extractor", "dataset", "id", "lang", "status", "reason", "message", "has_gold", "ratio",
    "token_precision", "token_recall", "token_f1", "line_recall", "snippet_tp", "snippet_fn", "snippet_fp",
    "snippet_tn", "gold_chars", "pred_chars", "no_body", "seconds",
)
_COLUMNS = (
    ("pages", "pages", "d"), ("scored", "gold", "d"), ("failed", "fail", "d"), ("mean_ratio", "ratio", ".3f"),
    *((f"acc@{t:.2f}", f"@{t:.2f}", ".3f") for t in THRESHOLDS),
    ("token_f1", "tokF1", ".3f"), ("line_recall", "lineR", ".3f"), ("snippet_precision", "snipP", ".3f"),
    ("snippet_recall", "snipR", ".3f"), ("seconds_per_page", "s/page", ".3f"),
)


def _cell(value: Any, fmt: str) -> str:
    """A table cell; '-' for a missing figure."""
    return "-" if value is None else format(value, fmt)


def table_rows(summary: Sequence[dict[str, Any]], by_lang: bool) -> list[dict[str, Any]]:
    """Summary rows of one table, sorted by dataset, language and extractor (ALL datasets last)."""
    several = len({r["dataset"] for r in summary if r["dataset"] != ALL}) > 1
    if by_lang:
        rows = [r for r in summary if r["dataset"] != ALL and r["lang"] != ALL]
    else:  # the all-datasets rows only when there are several datasets
        rows = [r for r in summary if r["lang"] == ALL and (several or r["dataset"] != ALL)]
    return sorted(rows, key=lambda r: (r["dataset"] == ALL, r["dataset"], r["lang"], r["extractor"]))


def format_table(summary: Sequence[dict[str, Any]], by_lang: bool = False, markdown: bool = False) -> str:
    """Extractor x dataset (or x language) table of every headline figure."""
    head = ["dataset", "lang", "extractor"] + [c[1] for c in _COLUMNS]
    body = [
        [r["dataset"] if r["dataset"] != ALL else "(all)", r["lang"], r["extractor"]]
        + [_cell(r.get(key), fmt) for key, _, fmt in _COLUMNS]
        for r in table_rows(summary, by_lang)
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    fmt_row = lambda row: "  ".join(str(x).rjust(w) if i > 2 else str(x).ljust(w)  # noqa: E731
                                    for i, (x, w) in enumerate(zip(row, widths, strict=True)))
    return "\n".join([fmt_row(head), *(fmt_row(row) for row in body)])


def page_row(r: PageResult) -> dict[str, Any]:
    """One CSV row of a page result."""
    s = r.score
    return {
        "extractor": r.extractor, "dataset": r.dataset, "id": r.page_id, "lang": r.lang or "",
        "status": r.status, "reason": r.reason, "message": r.message, "has_gold": int(s.has_gold),
        "ratio": s.ratio, "token_precision": s.token_precision, "token_recall": s.token_recall,
        "token_f1": s.token_f1, "line_recall": s.line_recall, "snippet_tp": s.snippet_tp,
        "snippet_fn": s.snippet_fn, "snippet_fp": s.snippet_fp, "snippet_tn": s.snippet_tn,
        "gold_chars": r.gold_chars, "pred_chars": r.pred_chars, "no_body": int(r.no_body),
        "seconds": round(r.seconds, 4),
    }


def write_csv(results: Sequence[PageResult], path: Path) -> None:
    """Every page result, one row each."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for r in sorted(results, key=lambda r: (r.extractor, r.dataset, r.page_id)):
            writer.writerow(page_row(r))


def write_json(report: dict[str, Any], path: Path) -> None:
    """The report with every figure, as indented UTF-8 JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def plot_accuracy(summary: Sequence[dict[str, Any]], path: Path) -> None:
    """Accuracy against threshold (0.5-1.0), one panel per dataset (and all), one line per extractor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in table_rows(summary, by_lang=False) if r.get("curve")]
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    if not datasets:
        return
    cols = min(3, len(datasets))
    nrows = (len(datasets) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    for ax, ds in zip(axes.flat, datasets, strict=False):
        for r in (r for r in rows if r["dataset"] == ds):
            xs = [float(t) for t in r["curve"]]
            ax.plot(xs, list(r["curve"].values()), label=r["extractor"])
        ax.set_title("all datasets" if ds == ALL else ds)
        ax.set(xlim=(0.5, 1.0), ylim=(0.0, 1.02), xlabel="Levenshtein ratio threshold", ylabel="accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(datasets):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown_report(report: dict[str, Any], command: str | None = None) -> str:
    """A markdown page with both tables, the selection and the failure counts."""
    parts = ["# Evaluation report", ""]
    if command:
        parts += ["Command:", "", f"    {command}", ""]
    parts += ["## Extractor x dataset", "", format_table(report["summary"], markdown=True), ""]
    parts += ["## Per language", "", format_table(report["summary"], by_lang=True, markdown=True), ""]
    parts += ["## Selection", ""]
    for name, note in report["selection"].items():
        parts.append(f"- {name}: {note.get('pages')} of {note.get('pages_in_dataset')} pages"
                     + (f", split {note['split']} ({note.get('split_source')})" if note.get("split") else ""))
    parts += ["", f"Failures recorded: {len(report['failures'])} (see report.json and pages.csv).", ""]
    return "\n".join(parts)


def write_outputs(report: dict[str, Any], results: Sequence[PageResult], out_dir: Path | None,
                  json_path: Path | None = None, command: str | None = None) -> list[Path]:
    """Write report.json (or json_path), pages.csv, accuracy.png (when matplotlib is installed: pip install
    'bodyblocks[train]') and report.md; return the paths written."""
    written: list[Path] = []
    if json_path is not None:
        write_json(report, json_path)
        written.append(json_path)
    if out_dir is None:
        return written
    out_dir.mkdir(parents=True, exist_ok=True)
    if json_path is None:
        write_json(report, out_dir / "report.json")
        written.append(out_dir / "report.json")
    write_csv(results, out_dir / "pages.csv")
    written.append(out_dir / "pages.csv")
    if importlib.util.find_spec("matplotlib") is not None:  # the plot needs the training extra
        plot_accuracy(report["summary"], out_dir / "accuracy.png")
        written.append(out_dir / "accuracy.png")
    (out_dir / "report.md").write_text(markdown_report(report, command), encoding="utf-8")
    written.append(out_dir / "report.md")
    return written
