"""Optional packages, imported when a feature needs them: a missing one is one line naming the extra to install.

    warcio = require("warcio", "reading WARC files")      # ImportError: ... pip install 'bodyblocks[scale]'
"""

from __future__ import annotations

import importlib
from types import ModuleType

# the extra of pyproject.toml that installs each optional module (by its top-level name)
EXTRA_OF = {"warcio": "scale", "pyarrow": "scale", "ray": "scale", "datatrove": "scale", "selenium": "capture",
            "torch": "train", "sklearn": "train", "matplotlib": "train", "onnx": "train", "onnxscript": "train"}


def require(module: str, purpose: str) -> ModuleType:
    """Import `module`; when it is not installed, an ImportError whose message names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".", 1)[0]
        extra = EXTRA_OF.get(top)
        how = f"pip install 'bodyblocks[{extra}]'" if extra else f"pip install {top}"
        raise ImportError(f"{purpose} needs {top}, which is not installed ({how})") from exc
