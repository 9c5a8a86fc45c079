"""The heuristic's vote against the segmenter, in CPU ms per page, and against another revision's vote.

    python -m benchmarks.vote_speed                       # 500 dataset pages (cli_speed's folder of them)
    python -m benchmarks.vote_speed --against 23771da     # and that revision's vote, alternating, same pages

Each page is segmented (segment.segment_tree) and voted on (extraction/vote.add_vote, which prunes the tree the
segmenter parsed), timed with process_time, for --rounds rounds. With --against, that revision's
baselines/rules.py, baselines/pruning.py and extraction/vote.py (`git show REV:PATH`; a revision since the vote's
pruning has had a module of its own) are loaded beside this tree's in the same process, the two run in turn on
every page (which goes first alternates), and the pages whose votes differ are counted: a change meant to be
faster only must print 0.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import arguments, in_turn, revision_modules, sample_pages

# the modules of the vote, with the imports that tie them together (renamed for the other revision's copy)
MODULES = (("rules", "src/bodyblocks/baselines/rules.py", ()),
           ("pruning", "src/bodyblocks/baselines/pruning.py", (("bodyblocks.baselines import rules", "rules"),)),
           ("vote", "src/bodyblocks/extraction/vote.py", (("bodyblocks.baselines.pruning", "pruning"),)))


def revision_vote(rev: str) -> Any:
    """The add_vote of revision `rev` (its vote modules as they are there, loaded under other names)."""
    return revision_modules(rev, MODULES, "vote_speed")["vote"].add_vote


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, pages=500, rounds=2)
    ap.add_argument("--against", default=None, help="a git revision whose vote to time beside this tree's")
    args = ap.parse_args(argv)

    from bodyblocks.extraction.vote import VOTE, add_vote
    from bodyblocks.page.segment import segment_tree

    pages = sample_pages(args.pages, "bb-vote-")
    votes = {"this tree": add_vote, **({args.against: revision_vote(args.against)} if args.against else {})}
    seg = dict.fromkeys(votes, 0.0)
    took = dict.fromkeys(votes, 0.0)
    differ = 0
    clock = time.process_time
    for r in range(args.rounds):
        for i, html in enumerate(pages):
            got = {}
            for name in in_turn(list(votes), i, r):
                t0 = clock()
                doc, tree = segment_tree(html)
                t1 = clock()
                votes[name](doc, html, tree)
                t2 = clock()
                seg[name] += t1 - t0
                took[name] += t2 - t1
                got[name] = doc.extra[VOTE]
            differ += len(got) > 1 and not np.array_equal(*got.values())
    n = args.rounds * len(pages)
    print(f"{len(pages)} pages x {args.rounds} rounds, CPU ms per page")
    for name in votes:
        print(f"  {name}: segment_tree {1000 * seg[name] / n:.2f}, vote {1000 * took[name] / n:.2f}")
    if args.against:
        print(f"  pages whose votes differ: {differ} of {n}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
