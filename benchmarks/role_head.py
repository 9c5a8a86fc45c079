"""The block Transformer with a role head, leave-one-source-out: does predicting each block's role (training/roles.py)
beside body / non-body give a better extractor on sources never trained on?

    R=body,headline,standfirst,byline,caption,related,promo,share,comment,navigation,sidebar,key_points,other
    python -m benchmarks.loso --out runs/loso-roles-bal --parts model --no-shipped --train-only --epochs 3 \\
        --set "model.roles=[$R]" --set model.role_balance=0.5
    python -m benchmarks.role_head --roles runs/loso-roles-bal --out runs/role-head-bal --blend runs/loso-blend \\
        --base-scores runs/vote-split/pages-blend.pkl --workers 2 --write docs/CONVENTION.md#role-head

(--base-scores: vote_split's scores of the same --blend, whose key is checked, so the base variant is not scored
again; without it, it is.)

Each fold's role model is trained as loso.py trains the fold's model (the same recipe, pages, epochs and seed; the
body head on the gold's labels, `data.targets: gold`) with a second head over the roles of the convention
(model.roles, model.role_weight times its cross-entropy). Its parts (OUT/parts/S.pkl) are --blend's parts of fold S
(the same test pages, segmentations, trees and vote) with the role model's P(body) in place of the model's, and its
P(role) of every block. Variants, each scored as loso_blend scores its grid (vote_split.cached_scores: the same
decision rule, gold conventions and nested choice, every setting of the grid):

  base       --blend's parts: the fold models without a role head (loso_blend's nested figure);
  multitask  the role models' P(body) alone: what training beside the role head does to the body head;
  drop       P(body) times 1 - P(dropped), P(dropped) the role head's probability summed over DROPPED, the roles the
             convention never keeps (a caption, a related list, a sidebar's widget, ...). Not the headline, standfirst
             and byline, which the decision rule takes out and puts back where a source's gold holds them, and not
             comments: a thread's posts are its body, and the role head's `comment` fired on article paragraphs of
             unseen sites (daniel's we-dwoje.pl, iatronet.gr) in a first replay at the nested settings, which also
             tried a veto (P(body) at most 1 - P(dropped) where P(dropped) > 0.5 or 0.7: no better than multitask);
  either     multitask and drop as one grid: each fold's setting and whether to drop, chosen on the other folds.

Also: the role head's accuracy on each fold's test blocks against the convention's roles of those pages
(training/roles.page_roles on the fold's cached pages, where the cache's blocks are the parts' blocks).
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import arguments, write_report
from benchmarks.loso_blend import SOURCES, ZH, load_parts, log
from benchmarks.vote_split import (
    KINDS,
    blended,
    cached_scores,
    choose,
    fmt_pair,
    fold_keys,
    made_from,
    mean_pair,
    nested,
    split_grid,
)
from bodyblocks.inference.blocks import Blend
from bodyblocks.runtime.files import write_atomic
from bodyblocks.training.roles import ROLES

DROPPED = ("caption", "related", "promo", "share", "navigation", "sidebar", "key_points")


def role_parts(pages: list[dict[str, Any]], model_dir: Path, batch: int = 16) -> list[dict[str, Any]]:
    """The pages of a fold's parts with the role model's P(body) as "model" and its P(role) as "roles" (n, R)."""
    from bodyblocks.inference.model import collate
    from bodyblocks.inference.model_scorer import ModelScorer

    scorer = ModelScorer.load(model_dir, device="cpu")
    if list(scorer.cfg.roles) != list(ROLES):
        raise ValueError(f"{model_dir}: its roles are {scorer.cfg.roles}, not training/roles.ROLES")
    idx = [i for i, p in enumerate(pages) if "model" in p]
    docs = [pages[i]["doc"] for i in idx]
    probs = scorer.forward(docs, scorer.prepare(docs))
    roles: list[np.ndarray] = []
    for k in range(0, len(docs), batch):
        roles += scorer.model.role_probabilities(collate([scorer.inputs(d) for d in docs[k : k + batch]]))
    out = [dict(p) for p in pages]
    for i, p, r in zip(idx, probs, roles, strict=True):
        out[i]["model"], out[i]["roles"] = p, r.astype(np.float16)
    return out


def load_role_parts(out: Path, roles: Path, blend: Path, base: dict[str, list[dict[str, Any]]]
                    ) -> dict[str, list[dict[str, Any]]]:
    """OUT/parts/S.pkl of every fold, made from the base parts (--blend/parts/S.pkl) and --roles/S/model when
    missing or made from other files (OUT/parts/S.json: their names, sizes and times)."""
    parts = {}
    for source, pages in base.items():
        path, model = out / "parts" / f"{source}.pkl", roles / source / "model"
        key = json.dumps(made_from([blend / "parts" / f"{source}.pkl", model / "model.safetensors"]))
        made = path.with_suffix(".json")
        if not path.exists() or not made.exists() or made.read_text() != key:
            log(f"{source}: the role model's parts")
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, pickle.dumps(role_parts(pages, model)))
            write_atomic(made, key)
        parts[source] = pickle.loads(path.read_bytes())
    return parts


def dropped(page: dict[str, Any]) -> np.ndarray:
    """P(a role in DROPPED) of each block of a page of the role parts."""
    cols = [ROLES.index(r) for r in DROPPED]
    return np.asarray(page["roles"], np.float32)[:, cols].sum(axis=1)


def times_kept(page: dict[str, Any], blend: Blend) -> np.ndarray:
    """Variant drop: P(body) times 1 - P(dropped)."""
    return blended(page, blend) * (1.0 - dropped(page))


def role_accuracy(parts: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, tuple[int, int, int]]]:
    """Per fold and role: (blocks of the role by the convention, of them predicted so, predicted so in all), on the
    test pages whose convention cache has the parts' blocks (the same texts in the same order)."""
    from bodyblocks.training.cache import load_cached
    from bodyblocks.training.datasets import resolve_dataset

    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for source, pages in parts.items():
        cached = {cp.id: cp for cp in load_cached(resolve_dataset(source), targets="convention")}
        counts = {r: [0, 0, 0] for r in ROLES}
        for p in pages:
            cp = cached.get(p["id"])
            if "roles" not in p or cp is None or cp.roles is None:
                continue
            if [b.text for b in cp.blocks] != [b.text for b in p["doc"].blocks]:
                continue
            predicted = np.asarray(p["roles"], np.float32).argmax(axis=1)
            for truth, guess in zip(cp.roles, predicted, strict=True):
                counts[truth][0] += 1
                counts[truth][1] += ROLES[guess] == truth
                counts[ROLES[guess]][2] += 1
        out[source] = {r: (c[0], c[1], c[2]) for r, c in counts.items()}
    return out


def _setting(s: tuple[Any, ...]) -> str:
    """A split grid's setting as the report shows it (the variant where a grid holds two)."""
    return f"{s[:4]} vote {s[4][0]}" + (f" {s[5]}" if len(s) > 5 else "")


def report(results: dict[str, dict[tuple[Any, ...], Any]], accuracy: dict[str, dict[str, tuple[int, int, int]]]
           ) -> str:
    lines = ["Written by benchmarks/role_head.py (its docstring says how). Token F1 / acc@0.9 on each source's test "
             "pages, each fold's setting chosen on the other folds (nested, as loso_blend).", "",
             "| variant | " + " | ".join(SOURCES) + f" | {ZH} | mean | oracle mean |",
             "|---|" + "---|" * (len(SOURCES) + 3)]
    notes = []
    for name, grid in results.items():
        chosen = nested(grid)
        folds = [grid[chosen[f]][f] for f in SOURCES]
        oracle = [max((grid[s][f] for s in grid), key=sum) for f in SOURCES]
        lines.append(f"| {name} | " + " | ".join(fmt_pair(x) for x in folds) + f" | {fmt_pair(grid[chosen[ZH]][ZH])} | "
                     f"**{fmt_pair(mean_pair(folds), 4)}** | {fmt_pair(mean_pair(oracle))} |")
        everywhere = choose(grid, list(SOURCES))
        notes.append(f"- {name}: nested settings " + ", ".join(f"{f} {_setting(chosen[f])}" for f in SOURCES)
                     + f"; over all folds {_setting(everywhere)}")
    lines += ["", "Settings are (model weight, threshold, outer threshold, core) and the vote's weight; the oracle is "
              "each fold's best setting chosen on the fold itself.", "", *notes, "",
              "The role head on each fold's test blocks, against the convention's roles: recall (blocks of the role "
              "predicted so / blocks of the role) and precision (right / predicted so).", "",
              "| role | " + " | ".join(SOURCES) + " |", "|---|" + "---|" * len(SOURCES)]
    for role in ROLES:
        cells = []
        for f in SOURCES:
            n, right, said = accuracy[f][role]
            cells.append("-" if not n and not said else
                         f"{right / n if n else 0:.2f} of {n:,} / {right / said if said else 0:.2f}")
        lines.append(f"| {role} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = arguments(__doc__, out="runs/role-head", write=True)
    ap.add_argument("--roles", type=Path, default=Path("runs/loso-roles"), help="fold folders holding the role "
                    "model (S/model)")
    ap.add_argument("--blend", type=Path, default=Path("runs/loso-blend"), help="the base loso_blend run (parts/)")
    ap.add_argument("--base-scores", type=Path, default=None, help="a vote_split pages-blend.pkl of --blend, "
                    "copied as the base variant's scores (its key is checked)")
    ap.add_argument("--workers", type=int, default=1, help="processes scoring the settings (default 1)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = load_parts(args.blend, Path("runs/loso-recipe"), Path("runs/loso-vocab"))
    parts = load_role_parts(args.out, args.roles, args.blend, base)
    keys = fold_keys(parts)
    kinds = {f: np.full(len(parts[f]), KINDS[0]) for f in SOURCES}  # one group: every page
    if args.base_scores is not None and not (args.out / "pages-base.pkl").exists():
        shutil.copy(args.base_scores, args.out / "pages-base.pkl")
    variants: dict[str, tuple[dict[str, list[dict[str, Any]]], Callable[..., np.ndarray], Path]] = {
        "base": (base, blended, args.blend),
        "multitask": (parts, blended, args.out),
        "drop": (parts, times_kept, args.out),
    }
    results = {}
    for name, (p, probs, blend) in variants.items():
        path = args.out / f"pages-{name}.pkl"
        scores = cached_scores(path, p, probs, args.workers, blend)
        results[name] = split_grid(scores, kinds, ((KINDS[0],),), keys)
    results["either"] = {(*s, name): row for name in ("multitask", "drop") for s, row in results[name].items()}
    text = report(results, role_accuracy(parts))
    print(text)
    write_report(args.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
