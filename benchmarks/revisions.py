"""Another revision's modules beside this tree's, in one process: what the *_speed benchmarks compare against.

    loaded = revision_modules("HEAD~1", (("dom", "src/bodyblocks/baselines/dom.py", ()),
                                         ("heuristic", "src/bodyblocks/baselines/heuristic.py",
                                          (("bodyblocks.baselines.dom", "dom"),))))
    loaded["heuristic"].body_text(tree)

Each module's source is `git show REV:PATH`, loaded under a name of its own; the imports named in its list are
pointed at the copies loaded before it (so list a module after those it imports): "MODULE" for `from MODULE
import ...`, "PACKAGE import NAME" for `from PACKAGE import NAME as ...`. Every other import is this tree's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
from collections.abc import Sequence

from bodyblocks.files import REPO_ROOT

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
