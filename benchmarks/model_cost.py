"""What the block model's shape costs on CPU: the forward pass of the shipped model against smaller shapes, one run.

    python -m benchmarks.model_cost                           # 500 of benchmarks/cli_speed.py's 2,000 pages
    python -m benchmarks.model_cost --pages 200 --write docs/SPEED.md#model-cost

Each shape is the shipped model's configuration with some keys changed (SHAPES), built with random weights
(seed 0: the cost of a forward pass does not depend on the weights' values) and exported to ONNX Runtime as
`bodyblocks export` exports the shipped one (training/export.export_model, its check against torch included).
The shipped folder's own export is measured beside them; its text table is stored in float16 (exact for
its weights: export._compact), random weights' in float32, so its embed.onnx casts the rows it gathers and the
shapes are held against the shipped shape with random weights. Pages: every fourth of benchmarks/cli_speed.py's
2,000-page folder (dataset pages), segmented and turned into model inputs once; then, page by page, every shape's
embed.onnx and context.onnx runs in turn (which shape goes first rotates), CPU time (time.process_time) on one
thread, as a worker of `bodyblocks extract` runs them. Printed: CPU ms per page of each file and their sum, the
parameters, and the sum against the shipped shape's with random weights. What each shape costs in accuracy is
not measured here: it needs the shape's leave-one-source-out folds (benchmarks/loso.py with the same `--set`
keys).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import arguments, write_report
from bodyblocks.runtime.files import REPO_ROOT

SHIPPED = REPO_ROOT / "checkpoints" / "default"
REFERENCE = "shipped shape, random weights"  # the shapes' figures are held against this one's
# name -> changes to the shipped model's config (keys of ModelConfig)
SHAPES: dict[str, dict[str, object]] = {
    REFERENCE: {},
    "d_model 128, d_ff 256": {"d_model": 128, "d_ff": 256},
    "d_model 128, d_ff 256, 2 layers": {"d_model": 128, "d_ff": 256, "n_layers": 2},
    "d_model 64, d_ff 128, 2 layers": {"d_model": 64, "d_ff": 128, "n_layers": 2},
    "1 layer": {"n_layers": 1},
    "no context layers": {"use_context": False},
}


def build(folder: Path, changes: dict[str, object], docs: list) -> int:
    """A model folder of the shipped config with `changes`, random weights, exported and checked; its parameters."""
    import torch

    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.classify.model_inputs import read_checkpoint
    from bodyblocks.config import ModelConfig, from_dict
    from bodyblocks.training.export import export_model

    meta = read_checkpoint(SHIPPED)
    cfg = from_dict(ModelConfig, {**meta["model"], **changes}, prefix="model.")
    torch.manual_seed(0)
    model = BlockClassifier(cfg).eval()
    extra = {k: v for k, v in meta.items() if k not in ("format_version", "kind", "bodyblocks_version", "model")}
    model.save(folder, extra=extra)
    export_model(folder, docs[:20])
    return model.n_parameters()


def build_shape(folder: Path, changes: dict[str, object], docs: list) -> int:
    """`build` into a new folder that starts as the shipped one's config.json (its decision rule included)."""
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("*.onnx", "*.safetensors"))
    return build(folder, changes, docs)


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, pages=500, write=True)  # pages: every fourth of the 2,000-page folder
    ap.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES),
                    help=f"the shapes to measure ({REFERENCE!r} is always measured)")
    args = ap.parse_args(argv)
    shapes = {name: SHAPES[name] for name in SHAPES if name == REFERENCE or name in args.shapes}

    from benchmarks.common import write_pages
    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.classify.onnx_model import OnnxModelScorer
    from bodyblocks.page.segment import segment

    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        count = write_pages(work_dir / "pages", 2000)
        files = sorted((work_dir / "pages").glob("*.html"))[::4][: args.pages]
        docs = [segment(f.read_bytes()) for f in files]
        folders, params = {"shipped model": SHIPPED}, {"shipped model": BlockClassifier.load(SHIPPED).n_parameters()}
        for i, (name, changes) in enumerate(shapes.items()):
            folder = work_dir / f"shape{i}"
            params[name] = build_shape(folder, changes, docs)
            folders[name] = folder
        scorers = {name: OnnxModelScorer.load(f) for name, f in folders.items()}
        for s in scorers.values():
            s.sessions()  # opened here, outside the timed calls
        inputs = {name: [s.inputs(d) for d in docs] for name, s in scorers.items()}
        spent = {name: [0.0, 0.0] for name in scorers}
        names = list(scorers)
        for p in range(len(docs)):
            for name in names[p % len(names):] + names[: p % len(names)]:
                s, page = scorers[name], inputs[name][p]
                if page.n == 0:
                    continue
                t0 = time.process_time()
                x = s.block_vectors(page)
                t1 = time.process_time()
                s._contextualise(s.sessions()[1], x)
                t2 = time.process_time()
                spent[name][0] += t1 - t0
                spent[name][1] += t2 - t1
    n = len(docs)
    blocks = sum(len(d.blocks) for d in docs)
    base = sum(spent[REFERENCE])
    lines = [f"{n} pages (every fourth of benchmarks/cli_speed.py's {count}-page folder), {blocks / n:.0f} blocks a "
             "page on average; CPU ms per page on one thread (ONNX Runtime)", "",
             "| model | parameters | embed.onnx | context.onnx | forward pass | against the shipped shape |",
             "|---|---|---|---|---|---|"]
    for name in names:
        e, c = (1000 * t / n for t in spent[name])
        lines.append(f"| {name} | {params[name]:,} | {e:.2f} | {c:.2f} | {e + c:.2f} | "
                     f"{sum(spent[name]) / base:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_report(args.write, f"Written by `python -m benchmarks.model_cost"
                     f"{' --pages ' + str(args.pages) if args.pages != 500 else ''} --write {args.write}` "
                     "(its docstring says how).\n\n" + text + "\n",
                     {k: {"embed_s": v[0], "context_s": v[1]} for k, v in spent.items()} | {"pages": n})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
