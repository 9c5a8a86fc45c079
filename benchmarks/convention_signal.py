"""The trees alone, trained on the gold's targets vs the convention's (docs/CONVENTION.md), on a left-out source.

    python -m benchmarks.convention_signal --fold l3s-gn1 --runs runs/conv-gold runs/conv-convention

Each RUN is a `benchmarks.loso --parts gbt --out RUN` folder, trained with `--set data.targets=KIND`; its fold's
trees (RUN/FOLD/gbt) run on the left-out source's test pages (data/splits). Printed per RUN:
  - token precision, recall, F1 and acc@0.9 under the source's own gold convention, the headline and byline put
    back where its gold holds them (`bodyblocks evaluate`, as the loso report: RUN/FOLD/eval-gbt.json, made here
    when missing);
  - of the characters the trees keep as body (Extraction.kept: the headline, byline and standfirst the decision
    rule takes out are not counted), the share in blocks that are not in the gold (training/labels: a block's
    gold label, at least half its characters aligned), and that share split by the block's role
    (training/roles.page_roles on the same blocks: caption, related, byline, promo, ...);
  - the share of kept characters in blocks whose role is not body, in the gold or not (what the convention calls
    not the article: a caption a source's gold holds is counted here, not above), by role.
The shares are of all kept characters over the test pages, pooled (not a mean of pages).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bodyblocks.evaluation.evaluate import ALL, BODY_ONLY, EvalConfig, evaluate, iter_selected, select
from bodyblocks.loading.plan import load
from bodyblocks.page.segment import segment_tree
from bodyblocks.runtime.files import write_json
from bodyblocks.training.labels import label_page
from bodyblocks.training.targets import ROLES, page_roles

METRICS = ("token_precision", "token_recall", "token_f1", "acc@0.90")


def scores(source: Path, fold: Path, limit: int | None = None) -> dict[str, dict[str, Any]]:
    """The trees' summary rows on the source's test pages ("with": headline and byline put back where the gold
    holds them; "body": the body alone), from FOLD/eval-gbt.json, evaluated (as benchmarks.loso does) if missing."""
    path = fold / "eval-gbt.json"
    if not path.exists():
        cfg = EvalConfig([str(source)], ["gbt"], split="test", limit=limit, workers=1,
                         extractor_opts={"gbt": {"checkpoint": str(fold / "gbt")}}, headline="both")
        report, _ = evaluate(cfg)
        write_json(path, {"summary": report["summary"], "selection": report["selection"],
                          "failures": len(report["failures"])})
    summary = json.loads(path.read_text(encoding="utf-8"))["summary"]
    rows = [r for r in summary if r["dataset"] != ALL and r["lang"] == ALL]
    return {"with": next(r for r in rows if not r["extractor"].endswith(BODY_ONLY)),
            "body": next(r for r in rows if r["extractor"].endswith(BODY_ONLY))}


def kept_roles(source: Path, fold: Path, limit: int | None = None) -> dict[str, Any]:
    """Characters the trees keep on the test pages: all, not in the gold, and not in the gold by block role."""
    extractor = load(fold / "gbt")
    positions, _ = select(str(source), "test", limit)
    kept = not_gold = pages = mismatched = 0
    by_role: Counter[str] = Counter()
    role_pages: Counter[str] = Counter()  # pages with kept-but-not-gold text of the role
    not_body: Counter[str] = Counter()  # kept characters of a role other than body, in the gold or not
    not_body_pages: Counter[str] = Counter()
    for page in iter_selected(str(source), positions):
        pages += 1
        if page.html is None or page.meta.get("error"):
            continue
        ex = extractor.extract(page.html)
        doc, root = segment_tree(page.html)
        if ex.blocks is None or [b.text for b in ex.blocks] != [b.text for b in doc.blocks]:
            mismatched += 1  # the extractor's blocks are not the segmenter's: not counted
            continue
        gold = label_page(page, doc.blocks).labels
        roles = page_roles(page, doc, root, gold)
        seen, seen_all = set(), set()
        for i in ex.kept or []:
            n = doc.blocks[i].text_len
            kept += n
            if not gold[i]:
                not_gold += n
                by_role[roles[i]] += n
                seen.add(roles[i])
            if roles[i] != "body":
                not_body[roles[i]] += n
                seen_all.add(roles[i])
        role_pages.update(seen)
        not_body_pages.update(seen_all)
    return {"pages": pages, "mismatched": mismatched, "kept_chars": kept, "not_gold_chars": not_gold,
            "by_role": dict(by_role), "role_pages": dict(role_pages),
            "not_body_chars": sum(not_body.values()), "not_body": dict(not_body),
            "not_body_pages": dict(not_body_pages)}


def table(results: dict[str, dict[str, Any]]) -> str:
    """Two markdown tables: the scores, and the kept-but-not-gold characters by role."""
    lines = ["| trained on | pages | token P | token R | token F1 | acc@0.9 | F1, body alone |",
             "|---|---|---|---|---|---|---|"]
    for kind, r in results.items():
        w, b = r["scores"]["with"], r["scores"]["body"]
        lines.append(f"| {kind} | {w['pages']} | " + " | ".join(f"{w[m]:.3f}" for m in METRICS)
                     + f" | {b['token_f1']:.3f} |")
    for title, chars, shares, pages in (
            ("the share in blocks not in the gold, and that share by the block's role", "not_gold_chars", "by_role",
             "role_pages"),
            ("the share in blocks whose role is not body (the convention's not-the-article, in the gold or not), "
             "by role", "not_body_chars", "not_body", "not_body_pages")):
        roles = [x for x in ROLES if any(r["kept"][shares].get(x) for r in results.values())]
        lines += ["", f"Of the characters kept as body: {title} (pages with such text in brackets).", "",
                  "| trained on | kept chars | all | " + " | ".join(roles) + " |",
                  "|---|---|---|" + "---|" * len(roles)]
        for kind, r in results.items():
            k = r["kept"]
            total = max(1, k["kept_chars"])
            cells = [f"{k[shares].get(x, 0) / total:.2%} ({k[pages].get(x, 0)})" for x in roles]
            lines.append(f"| {kind} | {k['kept_chars']:,} | {k[chars] / total:.2%} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fold", default="l3s-gn1", help="the left-out source")
    ap.add_argument("--runs", nargs="+", type=Path, required=True,
                    help="loso --out folders, named for their target kind (conv-gold, conv-convention)")
    ap.add_argument("--root", type=Path, default=None, help="datasets folder (default $BODYBLOCKS_DATASETS)")
    ap.add_argument("--limit", type=int, default=None, help="at most N test pages, evenly spread (a quick check: "
                    "eval-gbt.json is then written from as many)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    from bodyblocks.runtime.files import datasets_root_path

    root = args.root or datasets_root_path()
    source = Path(root) / args.fold
    results = {}
    for run in args.runs:
        fold = run / args.fold
        if not (fold / "gbt" / "model.safetensors").exists():
            print(f"{fold}: no trees yet", file=sys.stderr)
            continue
        kind = run.name.removeprefix("conv-")
        results[kind] = {"scores": scores(source, fold, args.limit),
                         "kept": kept_roles(source, fold, args.limit)}
    if args.json:
        write_json(args.json, results)
    print(f"{args.fold} test pages, the fold's trees alone (--parts gbt):\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
