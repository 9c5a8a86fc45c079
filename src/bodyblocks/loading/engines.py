"""What runs a model folder's forward passes: ONNX Runtime on the CPU where the folder has its export, else torch.

    engine_for(folder, meta, "auto", "cpu")      # "onnx" or "torch"; torch missing: an ImportError saying what to do

loading/checkpoints.py asks it when it plans a checkpoint (`locate`) and when it builds one (`load_extractor`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bodyblocks.classify import onnx_model
from bodyblocks.classify.model_inputs import EXPORTS
from bodyblocks.loading.options import ENGINES
from bodyblocks.runtime.extras import install_command


def gpu_present() -> bool:
    """Whether this machine has an NVIDIA driver loaded and torch installed (without importing torch)."""
    driver = Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()
    return driver and importlib.util.find_spec("torch") is not None


def engine_for(folder: Path, meta: Mapping[str, Any], engine: str = "auto", device: str = "auto") -> str:
    """The engine (`choose_engine`) of a model folder whose config.json is `meta`, once torch is known to be
    installed when it is torch.
    Raises:
        ValueError: an engine that cannot run here (choose_engine).
        ImportError: the torch engine without torch (what to install, or to export).
    """
    return torch_checked(folder, meta, choose_engine(folder, engine, device))


def choose_engine(folder: Path, engine: str = "auto", device: str = "auto") -> str:
    """What runs a model folder's forward passes: "onnx" (ONNX Runtime, CPU) or "torch".

    auto: ONNX Runtime when the folder has its export (`bodyblocks export`), ONNX Runtime is installed, and the
    device is the CPU (device "cpu", or "auto" on a machine without a GPU); torch otherwise.
    Raises:
        ValueError: an engine that cannot run here (onnx without an export or on a GPU device).
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    exported = onnx_model.has_export(folder, EXPORTS) and onnx_model.runtime_installed()
    if engine == "onnx":
        if device == "cuda":
            raise ValueError("engine onnx runs on the CPU; use engine torch for device cuda")
        if not exported:
            why = "ONNX Runtime is not installed" if onnx_model.has_export(folder, EXPORTS) else (
                f"{folder} has no ONNX export (run `bodyblocks export {folder}`)")
            raise ValueError(f"engine onnx: {why}")
        return "onnx"
    if engine == "torch":
        return "torch"
    cpu = device == "cpu" or (device == "auto" and not gpu_present())
    return "onnx" if cpu and exported else "torch"


def torch_checked(folder: Path, meta: Mapping[str, Any], engine: str) -> str:
    """`engine`, unless it is torch and torch is not installed: then an ImportError that says what to do (a model
    whose text input is a frozen encoder's vectors, e5-small or hf, runs on torch only)."""
    if engine != "torch" or importlib.util.find_spec("torch") is not None:
        return engine
    model = meta.get("model")
    encoder = model.get("encoder") if isinstance(model, dict) else None
    if isinstance(encoder, dict) and encoder.get("kind", "hash") != "hash":
        raise ImportError(f"{folder}: this model reads a pretrained encoder's vectors and needs torch "
                          f"({install_command('gpu,e5')})")
    raise ImportError(f"{folder}: this model needs torch here ({install_command('gpu')}), or an ONNX "
                      f"export on the CPU (`bodyblocks export {folder}` where torch is installed)")
