"""The Chinese news and government gold set: every extractor on the 62 gne-pages against the gold their block
labels make (data/annotations/gne-pages, made with `bodyblocks annotate`; docs/ANNOTATION.md).

    python -m benchmarks.gne_gold --write docs/EVALUATION.md#gne-gold
    python -m benchmarks.gne_gold --only runs/ft/split.json --extra finetuned=runs/ft/ensemble   # held-out pages

The gold text of a page is its body blocks' text, one block per line group (annotate.store.derived_gold); a
page whose stored labels no longer fit the segmenter's blocks is reported and left out. Figures, as in the
reference paper: accuracy at Levenshtein ratio >= 0.7 / 0.8 / 0.9 (white space removed), and mean token F1
and line recall per page; government pages apart from news pages (the annotator's `kind` of each page).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPORTS, arguments, write_report
from bodyblocks.evaluation.evaluate import run_one
from bodyblocks.loading.registry import available_extractors, get_extractor
from bodyblocks.metrics import summarize
from bodyblocks.page.segment import segment
from bodyblocks.runtime.files import datasets_root
from bodyblocks.training.annotations import apply_labels, derived_gold
from bodyblocks.training.datasets import annotated_pages

DEFAULT_EXTRACTORS = ["ensemble", "model", "gbt", "heuristic", "density", "gne", "trafilatura", "readability"]
LABELS = Path(__file__).resolve().parents[1] / "data" / "annotations" / "gne-pages"
GROUPS = ("all", "news", "government", "other")


def gne_dataset(path: str | None) -> Path | None:
    """The gne-pages folder: `path` when given, else under the datasets root; None when it is not there."""
    root = datasets_root()
    dataset = Path(path) if path else (root / "gne-pages" if root else None)
    return dataset if dataset is not None and dataset.is_dir() else None


def gold_pages(dataset: Path, labels: Path, only: set[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(pages with their derived gold, problems): one dict per page with id, kind, html, gold."""
    pages, problems = [], []
    for page, ann in annotated_pages(dataset, labels):
        if only is not None and page.id not in only:
            continue
        blocks = segment(page.html).blocks
        y, check = apply_labels(blocks, ann)
        if not check.exact:
            problems.append(f"{page.id}: {check.changed} blocks changed, {check.missing} not labelled: left out")
            continue
        pages.append({"id": page.id, "kind": ann.kind or "other", "html": page.html, "url": page.url,
                      "gold": derived_gold(blocks, y), "no_body": not any(y)})
    return pages, problems


def run(dataset: Path, labels: Path, extractors: dict[str, dict[str, Any]], only: set[str] | None = None
        ) -> dict[str, Any]:
    pages, problems = gold_pages(dataset, labels, only)
    rows: dict[str, dict[str, Any]] = {}
    per_page: dict[str, dict[str, float | None]] = {p["id"]: {} for p in pages}
    for name, opts in extractors.items():
        kind = opts.pop("name", name)
        ex = get_extractor(kind, **opts)
        start = time.perf_counter()
        results = [(p, run_one(ex, (p["html"], p["url"], p["gold"], None))) for p in pages]
        secs = time.perf_counter() - start
        groups: dict[str, list[Any]] = {}
        for p, res in results:
            for g in ("all", p["kind"]):
                groups.setdefault(g, []).append(res["score"])
            per_page[p["id"]][name] = res["score"].ratio
        rows[name] = {g: _figures(summarize(scores)) for g, scores in groups.items()}
        rows[name]["failed"] = sum(res["status"] != "ok" for _, res in results)
        rows[name]["seconds"] = round(secs, 1)
        print(f"{name}: {len(pages)} pages in {secs:.1f} s", file=sys.stderr)
    counts = {g: sum(1 for p in pages if g in ("all", p["kind"])) for g in GROUPS}
    return {"dataset": str(dataset), "labels": str(labels), "pages": len(pages), "counts": counts,
            "problems": problems, "rows": rows, "per_page_ratio": per_page}


def _figures(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s.get(k) for k in ("pages", "acc@0.70", "acc@0.80", "acc@0.90", "token_f1", "token_precision",
                                  "token_recall", "line_recall", "mean_ratio")}


def _agreement() -> str:
    """A sentence from benchmarks/annotation_agreement.py's data (runs/reports/agreement.json), when it is there."""
    path = REPORTS / "agreement.json"
    if not path.is_file():
        return "No second annotation was compared."
    a = json.loads(path.read_text(encoding="utf-8"))
    shift = max(abs(v["first"]["token_f1"] - v["second"]["token_f1"]) for v in a["scores"].values())
    differ = sum(r["differ"] for r in a["rows"])
    return (f"An independent second annotation of {a['pages']} pages, started from no labels "
            f"(docs/ANNOTATION.md), differs on {differ} of {a['blocks']:,} blocks (Cohen's kappa "
            f"{a['kappa']:.3f}) and moves no extractor's mean token F1 on those pages by more than {shift:.3f}.")


def markdown(res: dict[str, Any], command: str) -> str:
    out = [
        "# The Chinese news and government gold set (gne-pages)", "",
        f"Generated by `{command}`.", "",
        "62 Chinese news and government pages of ../shared/datasets/gne-pages (Sina, Toutiao, NetEase, Xinhua,",
        "WeChat, provincial government sites, ...), labelled block by block in `bodyblocks annotate` under",
        "docs/ANNOTATION.md's guidelines (data/annotations/gne-pages); a page's gold is its body blocks' text. No",
        "shipped extractor was trained or tuned on them. The annotators were AI sessions that started from the shipped",
        "model's labels, which could pull the gold towards it. " + _agreement(), "",
        "Accuracy at Levenshtein ratio >= 0.7 / 0.8 / 0.9, mean token F1 and line recall per page; pages in brackets.",
        "",
    ]
    out += [f"**all pages ({res['counts'].get('all', 0)})**", "",
            "| extractor | acc@0.7 | acc@0.8 | acc@0.9 | token F1 | token P | token R | line recall |",
            "|---|---|---|---|---|---|---|---|"]
    for name, row in res["rows"].items():
        f = row["all"]
        out.append(f"| {name} | {f['acc@0.70']:.3f} | {f['acc@0.80']:.3f} | {f['acc@0.90']:.3f} | "
                   f"{f['token_f1']:.3f} | {f['token_precision']:.3f} | {f['token_recall']:.3f} | "
                   f"{f['line_recall']:.3f} |")
    kinds = [g for g in GROUPS if g != "all" and res["counts"].get(g)]
    out += ["", "**by page kind: token F1 / acc@0.9**", "",
            "| extractor | " + " | ".join(f"{g} ({res['counts'][g]})" for g in kinds) + " |",
            "|---|" + "---|" * len(kinds)]
    for name, row in res["rows"].items():
        cells = [f"{row[g]['token_f1']:.3f} / {row[g]['acc@0.90']:.3f}" if row.get(g) else "–" for g in kinds]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out.append("")
    if res["problems"]:
        out += ["Left out (labels no longer fit the segmenter's blocks):", ""] + [f"- {p}" for p in res["problems"]]
    failed = {n: r["failed"] for n, r in res["rows"].items() if r["failed"]}
    if failed:
        out += ["", f"Failed pages (scored as empty): {failed}"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, write=True)
    ap.add_argument("--dataset", default=None, help="the gne-pages folder (default: under the datasets root)")
    ap.add_argument("--labels", default=str(LABELS))
    ap.add_argument("--extractors", default=",".join(DEFAULT_EXTRACTORS))
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=CHECKPOINT",
                    help="also an ensemble (or model, gbt) checkpoint folder under NAME")
    ap.add_argument("--only", default=None, help="a finetune split.json: only its held-out pages")
    args = ap.parse_args(argv)
    dataset = gne_dataset(args.dataset)
    if dataset is None:
        print("gne_gold: no gne-pages folder (set BODYBLOCKS_DATASETS or --dataset)", file=sys.stderr)
        return 2
    have = set(available_extractors())
    extractors: dict[str, dict[str, Any]] = {n: {} for n in args.extractors.split(",") if n in have}
    for item in args.extra:
        name, _, folder = item.partition("=")
        from bodyblocks.loading.checkpoints import kind_of

        extractors[name] = {"name": kind_of(folder), "checkpoint": folder}
    only = set(json.loads(Path(args.only).read_text())["held_out"]) if args.only else None
    res = run(dataset, Path(args.labels), extractors, only)
    command = "python -m benchmarks.gne_gold " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(res, command.strip())
    print(text)
    write_report(args.write, text, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
