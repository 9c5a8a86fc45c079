"""The regression gate: the shipped default's figures on a small pinned set of dataset pages, held in CI.

    python -m benchmarks.gate              # measure and compare with tests/gate/floors.json (exit 1 below a floor)
    python -m benchmarks.gate --record     # measure and write tests/gate/floors.json (after an intended change)

The pinned set is each labelled source's test split (data/splits), PAGES_PER_SOURCE pages evenly spread over
it, scored exactly as `bodyblocks evaluate --split test --limit N` scores them (evaluation.evaluate). The
floors file records those page ids too, so a change of the split files is seen, not silently re-pinned.
tests/test_gate.py runs the same comparison when ../shared/datasets is present.

The segmenter has its own gate, which needs no dataset: the blocks of each tricky fixture page in
tests/gate/pages (a script before <html>, invisible text, tables, lists and code, broken markup, undeclared
GBK, an app shell whose text is in <noscript>) are recorded beside it as NAME.blocks.json; `--record` writes
them too, and the test fails when a page's blocks change.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bodyblocks.evaluation.evaluate import ALL, EvalConfig, aggregate, evaluate_pages
from bodyblocks.runtime.files import REPO_ROOT

SOURCES = ("wcxb-dev", "daniel", "dragnet", "cleaneval-en", "cleanportaleval", "l3s-gn1")
PAGES_PER_SOURCE = 12
EXTRACTOR = "ensemble"  # the shipped default
FIGURES = ("token_f1", "acc@0.90")
# ONNX Runtime's kernels differ by a few ulps between CPUs; a page can cross the 0.9 ratio line on that alone
TOLERANCE = {"token_f1": 0.002, "acc@0.90": 1 / PAGES_PER_SOURCE + 1e-9}
FLOORS = REPO_ROOT / "tests" / "gate" / "floors.json"
FIXTURES = REPO_ROOT / "tests" / "gate" / "pages"


def fixture_blocks(page: Path) -> list[dict[str, str]]:
    """The segmenter's blocks of one fixture page: text and tag path, in order (the shipped parser choice)."""
    from bodyblocks.page.segment import segment

    doc = segment(page.read_bytes())
    return [{"text": b.text, "path": b.tag_path} for b in doc.blocks] + [{"title": doc.title}]


def fixture_pages() -> list[Path]:
    """The tricky pages of the segmenter's gate."""
    return sorted(FIXTURES.glob("*.html"))


def recorded_blocks(page: Path) -> Path:
    """Where a fixture page's recorded blocks live."""
    return page.with_suffix(".blocks.json")


def measure(sources: tuple[str, ...] = SOURCES, limit: int = PAGES_PER_SOURCE) -> dict[str, Any]:
    """{"pages": {source: [ids]}, "figures": {source: {figure: value}}} for the shipped default, one process."""
    cfg = EvalConfig(datasets=list(sources), extractors=[EXTRACTOR], split="test", limit=limit, workers=0)
    results, _ = evaluate_pages(cfg)
    pages: dict[str, list[str]] = {}
    for r in results:
        pages.setdefault(r.dataset, []).append(r.page_id)
    figures = {row["dataset"]: {k: round(row[k], 4) for k in FIGURES}
               for row in aggregate(results) if row["lang"] == ALL and row["dataset"] != ALL}
    return {"extractor": EXTRACTOR, "split": "test", "limit": limit, "pages": pages, "figures": figures}


def compare(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """One line per figure below its floor, or per source whose pinned pages changed."""
    problems = []
    for source, ids in recorded["pages"].items():
        if now["pages"].get(source) != ids:
            problems.append(f"{source}: the pinned pages changed (split files?): re-record on purpose")
    for source, figs in recorded["figures"].items():
        for key, floor in figs.items():
            got = now["figures"].get(source, {}).get(key)
            if got is None or got < floor - TOLERANCE[key]:
                problems.append(f"{source} {key}: {got} < recorded {floor}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help=f"write the figures to {FLOORS.relative_to(REPO_ROOT)}")
    args = ap.parse_args(argv)
    now = measure()
    for source, figs in now["figures"].items():
        print(f"{source:16s} " + "  ".join(f"{k} {v:.4f}" for k, v in figs.items()))
    if args.record:
        for page in fixture_pages():
            recorded_blocks(page).write_text(json.dumps(fixture_blocks(page), indent=1, ensure_ascii=False) + "\n",
                                             encoding="utf-8")
        FLOORS.parent.mkdir(parents=True, exist_ok=True)
        FLOORS.write_text(json.dumps(now, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {FLOORS}")
        return 0
    problems = compare(json.loads(FLOORS.read_text(encoding="utf-8")), now)
    problems += [f"{page.name}: its blocks changed" for page in fixture_pages()
                 if fixture_blocks(page) != json.loads(recorded_blocks(page).read_text(encoding="utf-8"))]
    print("\n".join(problems) or "gate: every figure at or above its floor")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
