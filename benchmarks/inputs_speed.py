"""The default extractor's per-page inputs in CPU ms per page, and against another revision's.

    python -m benchmarks.inputs_speed                       # 500 dataset pages (cli_speed's folder of them)
    python -m benchmarks.inputs_speed --against HEAD~1      # and that revision's inputs, alternating, same pages

Each page is segmented once (segment.segment); then, per page and timed with process_time, the model's inputs
(inference/inputs.prepare_page with the ensemble's model config: features.block_features, tag_bags and
ngram_bags) and the trees' part (inference/gbt.GbtScorer.scores from those inputs: gbt_features and the walk
through the trees), and context.context_features (the trees' optional context columns, unused by the shipped
trees). With --against, that revision's features.py, context.py, inference/inputs.py and inference/gbt.py
(`git show REV:PATH`) are loaded beside this tree's in the same process, the two run in turn on every page
(which goes first alternates), and the pages on which any array differs (PageInputs' fields, the trees' feature
matrix and P(body), the context features; values and dtypes) are counted: a change meant to be faster only
must print 0. Each side keeps its own caches (features' lru_caches) across the pages, as a long run does; the
segmented pages are frozen out of the garbage collector's passes (gc.freeze), as a run holds only a few.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.revisions import comparison_args, in_turn, revision_modules, sample_pages

# the modules of the inputs, with the imports that tie them together (renamed for the other revision's copy)
MODULES = (("features", "src/bodyblocks/features.py", ()),
           ("context", "src/bodyblocks/context.py", ()),
           ("inputs", "src/bodyblocks/inference/inputs.py", (("bodyblocks.features", "features"),)),
           ("gbt", "src/bodyblocks/inference/gbt.py", (("bodyblocks.features", "features"),
                                                       ("bodyblocks.context", "context"))))
PAGE_FIELDS = ("features", "tag_ids", "tag_offsets", "text_vectors", "text_ids", "text_offsets", "labels")


def this_tree() -> dict[str, types.ModuleType]:
    """This tree's input modules."""
    from bodyblocks import context, features
    from bodyblocks.inference import gbt, inputs

    return {"features": features, "context": context, "inputs": inputs, "gbt": gbt}


def same(a: Any, b: Any) -> bool:
    """Whether two arrays (or None) are equal in shape, dtype and values (NaN equal to NaN)."""
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


class Side:
    """One revision's steps on a page, timed."""

    def __init__(self, mods: dict[str, types.ModuleType], ex: Any) -> None:
        self.mods, self.cfg = mods, ex.model.cfg
        gbt = mods["gbt"]
        trees = ex.gbt.model  # the loaded trees, as that revision's GbtModel (whose gbt_features they use)
        model = gbt.GbtModel(**{f.name: getattr(trees, f.name) for f in dataclasses.fields(gbt.GbtModel)})
        self.trees = gbt.GbtScorer(model, ex.gbt.tag_buckets)
        self.took = {"model inputs": 0.0, "trees": 0.0, "context": 0.0}

    def run(self, doc: Any, clock: Callable[[], float]) -> list[Any]:
        """The page's arrays: PageInputs' fields, the trees' features and P(body), the context features."""
        t0 = clock()
        page = self.mods["inputs"].prepare_page(doc.blocks, self.cfg)
        t1 = clock()
        p = self.trees.scores([doc], [(0, page)])[0]
        t2 = clock()
        ctx = self.mods["context"].context_features(doc.blocks)
        t3 = clock()
        for name, t in zip(self.took, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            self.took[name] += t
        tags = (page.tag_ids, page.tag_offsets, self.trees.tag_buckets)
        x = self.mods["gbt"].gbt_features(doc.blocks, self.trees.model.cfg, page.features, tags)
        return [getattr(page, f) for f in PAGE_FIELDS] + [x, p, ctx]


def main(argv: list[str] | None = None) -> int:
    args = comparison_args(__doc__.splitlines()[0], "inputs").parse_args(argv)

    import bodyblocks
    from bodyblocks.segment import segment

    docs = [segment(html) for html in sample_pages(args.pages, "bb-inputs-")]
    docs = [d for d in docs if d.blocks]
    gc.freeze()  # the pages held here stay out of the collector's passes: a run holds a few pages at a time
    ex = bodyblocks.load("ensemble")
    sides = {"this tree": Side(this_tree(), ex)}
    if args.against:
        sides[args.against] = Side(revision_modules(args.against, MODULES, "inputs_speed"), ex)
    differ = 0
    clock = time.process_time
    for r in range(args.rounds):
        for i, doc in enumerate(docs):
            got = {name: sides[name].run(doc, clock) for name in in_turn(list(sides), i, r)}
            if len(got) > 1:
                a, b = got.values()
                differ += not all(same(x, y) for x, y in zip(a, b, strict=True))
    n = args.rounds * len(docs)
    print(f"{len(docs)} pages with blocks x {args.rounds} rounds, CPU ms per page")
    for name, side in sides.items():
        print(f"  {name}: " + ", ".join(f"{k} {1000 * v / n:.2f}" for k, v in side.took.items()))
    if args.against:
        print(f"  pages whose arrays differ: {differ} of {n}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
