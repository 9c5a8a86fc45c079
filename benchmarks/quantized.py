"""Experiment, not shipped: the Transformer's context.onnx with int8 weights (ONNX Runtime's dynamic quantisation).

    python -m benchmarks.quantized                     # speed on check pages, then test-split accuracy
    python -m benchmarks.quantized --limit 50          # at most 50 test pages per dataset

Copies the shipped ensemble (its model, trees and blend) into a temporary folder, replaces the model's
context.onnx with `onnxruntime.quantization.quantize_dynamic` of it (MatMul and Gemm weights int8; the
Attention op stays float), and prints:
  1. CPU ms per page of the model's forward pass (embed + context, one thread), float against int8, on the
     export's check pages (training/export.check_documents), with the largest |dP| of the model;
  2. `bodyblocks evaluate`'s token F1 and acc@0.9 of the ensemble on every labelled dataset's test split,
     float against int8 (the same pages, in this process).
The float figures are what the shipped ensemble gives; the int8 ones what it would give with the quantised
Transformer.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATASETS = ("cleaneval-en", "cleanportaleval", "daniel", "dragnet", "l3s-gn1", "wcxb-dev")


def int8_ensemble(out: Path) -> Path:
    """A copy of the shipped ensemble whose model's context.onnx has int8 weights; the ensemble folder."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from bodyblocks.inference import onnx_model as ox
    from bodyblocks.inference.checkpoints import SHIPPED

    for part in ("default", "gbt", "ensemble"):
        shutil.copytree(SHIPPED / part, out / part)
    context = out / "default" / ox.CONTEXT
    made_from = onnx.load(str(context)).metadata_props
    quantize_dynamic(str(context), str(out / "int8.onnx"), weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul", "Gemm"])  # (the Attention op is ONNX's, not com.microsoft's)
    quantized = onnx.load(str(out / "int8.onnx"))
    onnx.helper.set_model_props(quantized, {p.key: p.value for p in made_from})
    onnx.save_model(quantized, str(context))
    return out / "ensemble"


def speed(float_folder: Path, int8_folder: Path) -> None:
    """The model's forward pass, float against int8, on the export's check pages."""
    from bodyblocks.inference.checkpoints import load_extractor
    from bodyblocks.training.export import check_documents

    docs = check_documents()
    runs = []
    for folder in (float_folder, int8_folder):
        scorer = load_extractor("ensemble", folder, engine="onnx").model
        pages = [scorer.inputs(d) for d in docs]
        for p in pages[:5]:  # warm-up
            scorer.page_probabilities(p)
        t = time.process_time()
        probs = [scorer.page_probabilities(p) for p in pages]
        runs.append(((time.process_time() - t) / len(pages) * 1000, probs))
    (ms32, p32), (ms8, p8) = runs
    worst = max(float(np.abs(a - b).max()) for a, b in zip(p32, p8, strict=True))
    print(f"{len(docs)} check pages: the model's forward pass {ms32:.2f} ms/page float, {ms8:.2f} int8 (one "
          f"thread, CPU time); max |dP| of the model {worst:.4f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="test pages per dataset (default: all)")
    args = ap.parse_args(argv)
    from bodyblocks.evaluation.evaluate import ALL, EvalConfig, evaluate
    from bodyblocks.inference.checkpoints import SHIPPED

    work = Path(tempfile.mkdtemp(prefix="bodyblocks-int8-"))
    folders = {"float": SHIPPED / "ensemble", "int8": int8_ensemble(work)}
    speed(folders["float"], folders["int8"])
    rows = {}
    for label, folder in folders.items():
        cfg = EvalConfig(list(DATASETS), ["ensemble"], "test", args.limit, 0,
                         extractor_opts={"ensemble": {"checkpoint": str(folder), "engine": "onnx"}})
        report, results = evaluate(cfg)
        rows[label] = {r["dataset"]: r for r in report["summary"] if r["lang"] == ALL}
        rows[label + "-texts"] = {(r.dataset, r.page_id): r.score.token_f1 for r in results}
    print("\n| test split | float: token F1 / acc@0.9 | int8: token F1 / acc@0.9 |\n|---|---|---|")
    for ds in (*DATASETS, ALL):
        a, b = rows["float"].get(ds), rows["int8"].get(ds)
        if a and b:
            print(f"| {ds} | {a['token_f1']:.3f} / {a['acc@0.90']:.3f} | {b['token_f1']:.3f} / {b['acc@0.90']:.3f} |")
    same = sum(rows["float-texts"][k] == v for k, v in rows["int8-texts"].items())
    print(f"\npages with the same token F1 both ways: {same} of {len(rows['int8-texts'])}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
