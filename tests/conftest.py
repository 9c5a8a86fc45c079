"""Shared fixtures: where the shared datasets live (tests that need them skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bodyblocks.files import datasets_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from the Hugging Face hub, here or in CI
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    root = datasets_root()
    if root is None or not (root / "README.md").exists():
        pytest.skip("../shared/datasets is absent (set BODYBLOCKS_DATASETS to run dataset tests)")
    return root


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """Two cores, shared: torch's thread pool fights itself (a tiny step took 60x longer with 2 threads)."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
