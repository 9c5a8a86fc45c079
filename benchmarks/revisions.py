"""Another revision's modules beside this tree's, in one process: what the *_speed benchmarks compare against.

    loaded = revision_modules("HEAD~1", (("dom", "src/bodyblocks/baselines/dom.py", ()),
                                         ("heuristic", "src/bodyblocks/baselines/heuristic.py",
                                          (("bodyblocks.baselines.dom", "dom"),))))
    loaded["heuristic"].body_text(tree)

Each module's source is `git show REV:PATH`, loaded under a name of its own; the imports named in its list are
pointed at the copies loaded before it (so list a module after those it imports): "MODULE" for `from MODULE
import ...`, "PACKAGE import NAME" for `from PACKAGE import NAME as ...`. Every other import is this tree's.

Also the rest of what those benchmarks share: `comparison_args` (--pages, --rounds, --against), `sample_pages`
(the pages they time) and `in_turn` (which side goes first on a page).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import types
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from bodyblocks.files import REPO_ROOT

T = TypeVar("T")
Modules = Sequence[tuple[str, str, Sequence[tuple[str, str]]]]  # (short name, path, ((module, short name), ...))


def revision_modules(rev: str, modules: Modules, prefix: str) -> dict[str, types.ModuleType]:
    """Revision `rev`'s `modules`, by short name."""
    loaded: dict[str, types.ModuleType] = {}
    for short, path, imports in modules:
        src = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{rev}:{path}"], check=True,
                             capture_output=True, text=True).stdout
        for module, other in imports:
            if " import " in module:  # from PACKAGE import NAME as ALIAS
                src = src.replace(f"from {module} as", f"import {loaded[other].__name__} as")
            else:
                src = src.replace(f"from {module} import", f"from {loaded[other].__name__} import")
        name = re.sub(r"\W", "_", f"_{prefix}_{rev}_{short}")
        mod = types.ModuleType(name)
        mod.__file__ = f"{rev}:{path}"
        sys.modules[name] = mod
        exec(compile(src, mod.__file__, "exec"), mod.__dict__)
        loaded[short] = mod
    return loaded


def comparison_args(description: str, what: str) -> argparse.ArgumentParser:
    """The options every *_speed benchmark takes: --pages, --rounds, --against REV (`what`: what it times)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--against", default=None, help=f"a git revision whose {what} to time beside this tree's")
    return ap


def sample_pages(n: int, prefix: str) -> list[bytes]:
    """The bytes of `n` pages: cli_speed's folder of dataset pages (synthetic ones without the datasets)."""
    from benchmarks.cli_speed import write_pages

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    write_pages(folder, n)
    return [p.read_bytes() for p in sorted(folder.glob("*.html"))]


def in_turn(names: Sequence[T], page: int, round_: int) -> list[T]:
    """The sides in the order they run on a page: which goes first alternates from page to page and round to round."""
    return list(names) if (page + round_) % 2 == 0 else list(names)[::-1]
