"""The model's inputs of a page (classify/model_inputs.prepare_page), in CPU ms per page, against another revision's.

    python -m benchmarks.inputs_speed                       # 500 dataset pages (cli_speed's folder of them)
    python -m benchmarks.inputs_speed --against HEAD~1      # and that revision's prepare_page, alternating

Each page is segmented once; its inputs for the default checkpoint's settings are then made, timed with
process_time, for --rounds rounds. With --against, that revision's classify/model_inputs.py (`git show REV:PATH`, its
other imports this tree's) is loaded beside this tree's, the two run in turn on every page (which goes first
alternates), and the pages whose inputs differ in any array (values, dtype or shape) are counted: a change meant
to be faster only must print 0. Before each round the memos of tag paths, segments and tokens are emptied (those
of features.py and of each revision's inputs.py), so that a round costs what a run over new sites costs.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import arguments, in_turn, revision_modules, sample_pages

ARRAYS = ("features", "tag_ids", "tag_offsets", "text_vectors", "text_ids", "text_offsets", "labels")


def same_inputs(a: Any, b: Any) -> bool:
    """Whether two PageInputs hold the same arrays (values, dtypes and shapes)."""
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if (x is None) != (y is None):
            return False
        if x is not None and (x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y)):
            return False
    return True


def forget(modules: list[Any]) -> None:
    """Empty the memos of tag-path ids: features.py's caches and each inputs module's TagIds (where it has them)."""
    from bodyblocks.page import features

    for name in ("_tag_path_ids", "_path_ids", "_segment_ids", "segment_tokens", "tag_path_tokens", "hash_token"):
        getattr(features, name).cache_clear()
    for module in modules:
        getattr(module, "_TAG_IDS", {}).clear()


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, pages=500, rounds=2)
    ap.add_argument("--against", default=None, help="a git revision whose prepare_page to time beside this tree's")
    ap.add_argument("--checkpoint", default="checkpoints/default", help="whose model settings (config.json)")
    args = ap.parse_args(argv)

    from bodyblocks.classify import model_inputs as inputs
    from bodyblocks.classify.integrity import check_model_folder
    from bodyblocks.page.segment import segment
    from bodyblocks.runtime.files import REPO_ROOT

    folder = REPO_ROOT / args.checkpoint
    cfg = check_model_folder(folder, inputs.read_checkpoint(folder))
    modules = {"this tree": inputs}
    if args.against:
        modules[args.against] = revision_modules(
            args.against, (("inputs", "src/bodyblocks/classify/model_inputs.py", ()),),
            "inputs_speed")["inputs"]
    docs = [d for d in (segment(html) for html in sample_pages(args.pages, "bb-inputs-")) if d.blocks]
    took = dict.fromkeys(modules, 0.0)
    differ = 0
    clock = time.process_time
    for r in range(args.rounds):
        forget(list(modules.values()))
        for i, doc in enumerate(docs):
            got = {}
            for name in in_turn(list(modules), i, r):
                t0 = clock()
                got[name] = modules[name].prepare_page(doc.blocks, cfg)
                took[name] += clock() - t0
            differ += len(got) > 1 and not same_inputs(*got.values())
    n = args.rounds * len(docs)
    print(f"{len(docs)} pages x {args.rounds} rounds, CPU ms per page ({args.checkpoint}'s settings)")
    for name in modules:
        print(f"  {name}: prepare_page {1000 * took[name] / n:.3f}")
    if args.against:
        print(f"  pages whose inputs differ: {differ} of {n}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
