"""A trained model checkpoint made into a shipped one: fp16 weights (half the size), no training state.

    ship_model("runs/default/best", "checkpoints/default")      # or: bodyblocks ship runs/default/best --out ...

BlockClassifier.load casts the weights back to float32, so outputs differ from the fp32 checkpoint only by
fp16 rounding. Works for any model checkpoint folder (config.json + model.safetensors). A model with the hash
encoder is then exported for ONNX Runtime (training/export.py), checked against torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file

from bodyblocks.classify.integrity import DIGESTS, WEIGHTS, file_sha256
from bodyblocks.classify.model_inputs import EXPORTS, read_checkpoint
from bodyblocks.config import ModelConfig, from_dict
from bodyblocks.runtime.files import atomic_path, write_json
from bodyblocks.types import Document


def ship_model(src: str | Path, dst: str | Path, check_docs: Sequence[Document] | None = None,
               int8: bool = False) -> dict[str, Any]:
    """Write DST from the model checkpoint SRC; returns its size in MiB and its decision rule. `check_docs`: the
    pages the ONNX export is checked on (default: export.check_documents); `int8`: context.onnx with int8 weights
    (export.quantize_context), checked against torch too."""
    src, dst = Path(src), Path(dst)
    meta = read_checkpoint(src)
    meta.pop("train_state", None)
    meta["weights_dtype"] = "float16"
    weights = load_file(src / "model.safetensors")
    tensors = {k: (v.astype(np.float16) if v.dtype.kind == "f" else v) for k, v in weights.items()}
    with atomic_path(dst / "model.safetensors") as tmp:
        save_file(tensors, str(tmp))
    meta[DIGESTS] = {WEIGHTS: file_sha256(dst / WEIGHTS)}  # these weights', not the source's (checked at load)
    write_json(dst / "config.json", meta)
    for f in (dst / "model.safetensors", dst / "config.json"):
        f.chmod(0o644)
    for stale in EXPORTS:  # made from other weights
        (dst / stale).unlink(missing_ok=True)
    shipped = {"checkpoint": str(dst), "mib": round((dst / "model.safetensors").stat().st_size / 2**20, 1),
               "threshold": meta.get("threshold"), "rescue": meta.get("rescue")}
    cfg = from_dict(ModelConfig, meta["model"], prefix="model.")
    if not (cfg.use_text and cfg.encoder.frozen):  # a frozen encoder's vectors need torch: nothing to export
        from bodyblocks.training.export import export_model

        shipped["onnx"] = str(export_model(dst, check_docs, int8=int8))
    return shipped
