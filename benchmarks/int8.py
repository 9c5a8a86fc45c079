"""The shipped ensemble with an int8 Transformer (`bodyblocks export --int8`) against the float one, in one run.

    python -m benchmarks.int8                        # all three parts below
    python -m benchmarks.int8 --skip-evaluate        # speed and the 1,000 pages only
    python -m benchmarks.int8 --limit 50             # at most 50 test pages per dataset

Copies the shipped ensemble (model, trees, blend) into a temporary folder and gives its model's context.onnx
int8 weights with training/export.quantize_context, the step `bodyblocks export --int8` adds after the float
export (which the shipped files passed), then prints:
  1. CPU ms per page (time.process_time, one thread) of the model's forward pass (OnnxModelScorer.
     page_probabilities: embed + context), float against int8, the two in turn on every page (which goes first
     alternating), on benchmarks/cli_speed.py's dataset pages; and the time to open the context session;
  2. on benchmarks/identical_output.py's 1,000 dataset pages, through the Python API (the ensemble's extract):
     the largest |dP| of the ensemble's blended P(body) and the pages whose text, title or flags change;
  3. `bodyblocks evaluate`'s token F1 and acc@0.9 of the ensemble on the test split of every labelled dataset,
     float against int8 (the same pages, in this process).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATASETS = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")


def int8_ensemble(out: Path) -> Path:
    """A copy of the shipped ensemble whose model's context.onnx has int8 weights; the ensemble folder."""
    from bodyblocks.inference.checkpoints import SHIPPED
    from bodyblocks.training.export import quantize_context

    for part in ("default", "gbt", "ensemble"):
        shutil.copytree(SHIPPED / part, out / part)
    quantize_context(out / "default")
    return out / "ensemble"


def speed(folders: dict[str, Path], pages: int, rounds: int) -> None:
    """Part 1: the model's forward pass on each folder's model, in turn on every page."""
    from benchmarks.cli_speed import write_pages
    from bodyblocks.decode import read_bytes
    from bodyblocks.inference import onnx_model as ox
    from bodyblocks.inference.checkpoints import load_extractor
    from bodyblocks.segment import segment

    with tempfile.TemporaryDirectory() as tmp:
        write_pages(Path(tmp), pages)
        docs = [d for d in (segment(read_bytes(f)) for f in sorted(Path(tmp).iterdir())) if d.blocks]
    scorers = {k: load_extractor("ensemble", f, engine="onnx").model for k, f in folders.items()}
    for k, s in scorers.items():
        t = time.perf_counter()
        ox.open_session(s.folder / ox.CONTEXT)
        print(f"{k}: context session opens in {(time.perf_counter() - t) * 1000:.0f} ms")
    inputs = [next(iter(scorers.values())).inputs(d) for d in docs]  # the same inputs for both
    for s in scorers.values():
        for p in inputs[:5]:  # warm-up
            s.page_probabilities(p)
    cpu = dict.fromkeys(scorers, 0.0)
    names = list(scorers)
    for r in range(rounds):
        for i, p in enumerate(inputs):
            for k in names if (i + r) % 2 == 0 else names[::-1]:
                t = time.process_time()
                scorers[k].page_probabilities(p)
                cpu[k] += time.process_time() - t
    n = rounds * len(inputs)
    print(f"{len(inputs)} pages x {rounds} rounds: the model's forward pass, CPU ms per page (one thread): "
          + ", ".join(f"{k} {v / n * 1000:.2f}" for k, v in cpu.items()))


def same_pages(folders: dict[str, Path], pages: int) -> None:
    """Part 2: the ensemble's output on identical_output's pages, float against int8."""
    import gzip

    from benchmarks.identical_output import sample_pages
    from bodyblocks.errors import InputError
    from bodyblocks.files import datasets_root
    from bodyblocks.inference.checkpoints import load_extractor

    root = datasets_root()
    if root is None or not root.is_dir():
        print("no datasets: part 2 skipped")
        return
    chosen = sample_pages(root, pages)
    extractors = {k: load_extractor("ensemble", f, engine="onnx") for k, f in folders.items()}
    a, b = extractors.values()
    worst, changed, blocks, failed = 0.0, [], 0, 0
    for name, path in chosen:
        data = path.read_bytes()
        html = gzip.decompress(data) if path.name.endswith(".gz") else data
        try:
            x, y = a.extract(html), b.extract(html)
        except InputError:
            failed += 1
            continue
        blocks += len(x.probabilities)
        if len(x.probabilities):
            worst = max(worst, float(np.abs(np.asarray(x.probabilities) - np.asarray(y.probabilities)).max()))
        if (x.text, x.title, x.no_body, x.low_confidence) != (y.text, y.title, y.no_body, y.low_confidence):
            changed.append(name)
    print(f"{len(chosen)} dataset pages ({failed} refused by both), {blocks} blocks: max |dP| of the ensemble "
          f"{worst:.4f}; {len(changed)} pages change their text, title or flags")
    for name in changed[:20]:
        print("  changed:", name)


def accuracy(folders: dict[str, Path], limit: int | None) -> None:
    """Part 3: evaluate's token F1 and acc@0.9 on every test split, float against int8."""
    from bodyblocks.evaluation.evaluate import ALL, EvalConfig, evaluate

    rows, scores = {}, {}
    for label, folder in folders.items():
        cfg = EvalConfig(list(DATASETS), ["ensemble"], "test", limit, 0,
                         extractor_opts={"ensemble": {"checkpoint": str(folder), "engine": "onnx"}})
        report, results = evaluate(cfg)
        rows[label] = {r["dataset"]: r for r in report["summary"] if r["lang"] == ALL}
        scores[label] = {(r.dataset, r.page_id): r.score.token_f1 for r in results}
    a, b = folders
    print(f"\n| test split | pages | {a}: token F1 / acc@0.9 | {b}: token F1 / acc@0.9 |\n|---|---|---|---|")
    for ds in (*DATASETS, ALL):
        x, y = rows[a].get(ds), rows[b].get(ds)
        if x and y:
            print(f"| {ds} | {x.get('pages', '')} | {x['token_f1']:.4f} / {x['acc@0.90']:.3f} "
                  f"| {y['token_f1']:.4f} / {y['acc@0.90']:.3f} |")
    same = sum(scores[a].get(k) == v for k, v in scores[b].items())
    print(f"\ntest pages with the same token F1 both ways: {same} of {len(scores[b])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=600, help="pages of part 1 (cli_speed's folder of them)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of part 1")
    ap.add_argument("--same-pages", type=int, default=1000, help="pages of part 2 (identical_output's)")
    ap.add_argument("--limit", type=int, default=None, help="test pages per dataset in part 3 (default: all)")
    ap.add_argument("--skip-evaluate", action="store_true", help="parts 1 and 2 only")
    args = ap.parse_args(argv)
    from bodyblocks.inference.checkpoints import SHIPPED

    with tempfile.TemporaryDirectory(prefix="bodyblocks-int8-") as work:
        folders = {"float": SHIPPED / "ensemble", "int8": int8_ensemble(Path(work))}
        speed(folders, args.pages, args.rounds)
        same_pages(folders, args.same_pages)
        if not args.skip_evaluate:
            accuracy(folders, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
