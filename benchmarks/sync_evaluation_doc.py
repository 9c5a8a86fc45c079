"""Copy the generated tables of docs/evaluation/summary.md into docs/EVALUATION.md.

EVALUATION.md quotes summary.md's tables under bold titles (`**Token F1 (dataset x extractor)**`); summary.md
has them under `## Token F1 (dataset x extractor)`. For every bold title of EVALUATION.md that names a
section of summary.md, the Markdown table that follows the title is replaced by that section's table, so
no figure is typed in by hand. The prose around the tables is left alone. Prints the titles it updated.

    python -m benchmarks.sync_evaluation_doc [--summary docs/evaluation/summary.md] [--doc docs/EVALUATION.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bodyblocks.files import REPO_ROOT


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


def sync(doc: str, tables: dict[str, list[str]]) -> tuple[str, list[str]]:
    """doc with each bold-titled table replaced by summary's; and the titles replaced."""
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", type=Path, default=REPO_ROOT / "docs" / "evaluation" / "summary.md")
    ap.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "EVALUATION.md")
    args = ap.parse_args()
    text, done = sync(args.doc.read_text(encoding="utf-8"), tables_by_title(args.summary.read_text(encoding="utf-8")))
    args.doc.write_text(text, encoding="utf-8")
    print("\n".join(f"updated: {t}" for t in done))


if __name__ == "__main__":
    main()
