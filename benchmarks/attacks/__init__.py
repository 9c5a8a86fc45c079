"""Attacks of the hostile corpus that need more than one run or a setting of their own.

Each module here defines `scenarios(root: Path) -> list[tuple[str, bool, str]]`: it builds what it needs under
`root` (a folder of its own, absent before the call), runs it, and returns one (target, met, detail) a check.
`benchmarks.hostile_corpus` runs every module found here (`all_scenarios`), in name order.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

Target = tuple[str, bool, str]


def modules() -> list[str]:
    """The names of the modules that hold scenarios, in name order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def all_scenarios(root: Path) -> list[Target]:
    """Every module's targets; each module under root/<its name>."""
    targets: list[Target] = []
    for name in modules():
        run: Callable[[Path], list[Target]] = importlib.import_module(f"{__name__}.{name}").scenarios
        folder = root / name
        folder.mkdir(parents=True)
        targets.extend(run(folder))
    return targets
