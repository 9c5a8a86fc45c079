"""How the convention's training targets (training/targets.py) differ from each source's gold labels.

    python -m benchmarks.role_targets                       # 120 pages per source, seed 0
    python -m benchmarks.role_targets --pages 120 --write docs/CONVENTION.md#role-targets

For N pages per source (seeded sample of pages with gold), every block gets its role and its convention target
(`data.targets: convention`). Printed: per source and role, the gold-body blocks whose target turns 0 under the
convention (and the characters they hold); and, of the blocks of 15+ characters under a caption/figcaption path,
or with photo-credit text ("Photo:", "(AP" but not a dateline's "(AP) —", "Getty"), how many the gold holds and
how many the convention's target holds (the measure of the notes on the golds' disagreement).
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, need_root, write_report
from bodyblocks.page.segment import segment_tree
from bodyblocks.training.datasets import page_from_record, read_records
from bodyblocks.training.labels import label_page
from bodyblocks.training.targets import ROLES, convention_targets, page_roles
from bodyblocks.types import Block

SOURCES = ("cleaneval-en", "cleanportaleval", "daniel", "dragnet", "l3s-gn1", "wcxb-dev")
MIN_CHARS = 15
_CAPTION_PATH = re.compile(r"(?:^|/)(?:figcaption|caption)(?:[.#/]|$)|[.#][^./#]*caption", re.IGNORECASE)
_CREDIT_TEXT = re.compile(r"Photo:|\(AP\b(?!\)\s*[-–—])|Getty")  # not a news dateline's "WASHINGTON (AP) —"


def under_caption(block: Block) -> bool:
    return bool(_CAPTION_PATH.search(block.tag_path))


def credit_text(block: Block) -> bool:
    return bool(_CREDIT_TEXT.search(block.text))


def source_counts(folder: Path, pages: int, seed: int, show: set[str] = frozenset()) -> dict[str, Any]:
    """The counts of one source over a seeded sample of its pages with gold; the changed blocks of the roles in
    `show` are printed to stderr."""
    recs = [r for r in read_records(folder) if r.get("gold")]
    random.Random(seed).shuffle(recs)
    changed: Counter[str] = Counter()
    changed_chars: Counter[str] = Counter()
    roles_all: Counter[str] = Counter()
    gold_blocks = gold_chars = n = 0
    shares = {k: [0, 0, 0] for k in ("caption", "credit")}  # [blocks, in gold, in convention]
    for rec in recs[:pages]:
        page = page_from_record(folder, rec)
        if page.meta.get("error"):
            continue
        try:
            doc, root = segment_tree(page.html)
        except Exception:  # noqa: BLE001 - a page that cannot be segmented is left out of the sample
            continue
        gold = label_page(page, doc.blocks).labels
        roles = page_roles(page, doc, root, gold)
        target = convention_targets(roles, gold)
        n += 1
        for block, role, y, t in zip(doc.blocks, roles, gold, target, strict=True):
            roles_all[role] += 1
            if y:
                gold_blocks += 1
                gold_chars += block.text_len
                if not t:
                    changed[role] += 1
                    changed_chars[role] += block.text_len
                    if role in show:
                        print(f"{folder.name} {role}: {block.tag_path[-60:]} | {block.text[:100]!r}", file=sys.stderr)
            if block.text_len >= MIN_CHARS:
                for key, hit in (("caption", under_caption(block)), ("credit", credit_text(block))):
                    if hit:
                        shares[key][0] += 1
                        shares[key][1] += y
                        shares[key][2] += t
                        if t and "kept" in show:
                            print(f"{folder.name} kept {key}: {block.tag_path[-60:]} | {block.text[:100]!r}",
                                  file=sys.stderr)
    return {"pages": n, "gold_blocks": gold_blocks, "gold_chars": gold_chars, "changed": dict(changed),
            "changed_chars": dict(changed_chars), "roles": dict(roles_all), "shares": shares}


def report(counts: dict[str, dict[str, Any]], pages: int, seed: int) -> str:
    roles = [r for r in ROLES if r != "body" and any(c["changed"].get(r) for c in counts.values())]
    lines = [f"# Role targets against the gold ({pages} pages per source, seed {seed})", "",
             "Gold-body blocks whose target turns 0 under `data.targets: convention`, by role: blocks (characters).",
             "", "| source | pages | gold-body blocks | " + " | ".join(roles) + " | all changed |",
             "|---|---|---|" + "---|" * (len(roles) + 1)]
    for name, c in counts.items():
        cells = [f"{c['changed'].get(r, 0)} ({c['changed_chars'].get(r, 0):,})" for r in roles]
        total, chars = sum(c["changed"].values()), sum(c["changed_chars"].values())
        share = 100 * chars / max(1, c["gold_chars"])
        lines.append(f"| {name} | {c['pages']} | {c['gold_blocks']:,} | " + " | ".join(cells)
                     + f" | {total:,} ({chars:,}; {share:.1f} % of gold chars) |")
    lines += ["", "Blocks of 15+ characters under a caption/figcaption path, or with photo-credit text (\"Photo:\", "
              "\"(AP\" but not \"(AP) —\", \"Getty\"): in the gold / in the convention's target, of all.", "",
              "| source | caption path: gold | convention | credit text: gold | convention |", "|---|---|---|---|---|"]
    for name, c in counts.items():
        cap, cred = c["shares"]["caption"], c["shares"]["credit"]
        lines.append(f"| {name} | {cap[1]} / {cap[0]} | {cap[2]} / {cap[0]} | {cred[1]} / {cred[0]} "
                     f"| {cred[2]} / {cred[0]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, root=True, pages=120, seed=0, write=True)
    ap.add_argument("--sources", nargs="*", default=list(SOURCES))
    ap.add_argument("--show", nargs="*", default=[],
                    help="print the changed blocks of these roles, and with `kept` the caption/credit blocks the "
                         "convention keeps (stderr)")
    args = ap.parse_args(argv)
    root = need_root(args.root, "role_targets")
    counts = {}
    for name in args.sources:
        counts[name] = source_counts(root / name, args.pages, args.seed, set(args.show))
        print(f"{name}: {counts[name]['pages']} pages", file=sys.stderr)
    markdown = report(counts, args.pages, args.seed)
    print(markdown)
    write_report(args.write, markdown, counts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
