"""Copy a trained checkpoint into a shipped one: fp16 weights (half the size), config.json without train state.

    python scripts/ship_model.py runs/default/best checkpoints/default

BlockClassifier.load casts the weights back to float32, so outputs differ from the fp32 checkpoint only by
fp16 rounding. Works for any model checkpoint folder (config.json + model.safetensors).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def ship(src: Path, dst: Path) -> None:
    meta = json.loads((src / "config.json").read_text(encoding="utf-8"))
    meta.pop("train_state", None)
    meta["weights_dtype"] = "float16"
    weights = load_file(src / "model.safetensors")
    tensors = {k: (v.astype(np.float16) if v.dtype.kind == "f" else v) for k, v in weights.items()}
    dst.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(dst / "model.safetensors"))
    (dst / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for f in dst.iterdir():
        f.chmod(0o644)
    print(f"{dst}: {(dst / 'model.safetensors').stat().st_size / 2**20:.1f} MiB, threshold {meta.get('threshold')}, "
          f"rescue {meta.get('rescue')}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/ship_model.py SRC_CHECKPOINT DST_CHECKPOINT")
    ship(Path(sys.argv[1]), Path(sys.argv[2]))
