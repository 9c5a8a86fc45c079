"""What the benchmarks share: one argument prologue, one way to write a report, and the speed comparisons' helpers.

    ap = arguments(__doc__, root=True, pages=500, write="docs/SPEED.md#model-cost")
    args = ap.parse_args(argv)
    write_report(args.write, markdown, data)          # a whole page, or one section of a manual page

A report target is a Markdown file, or `FILE#SECTION`: the lines between `<!-- SECTION: begin -->` and
`<!-- SECTION: end -->` of a manual page are replaced (the report's own `# title` line left out), so that a
benchmark rewrites its table in docs/ without touching the prose around it. The data behind a whole-file report
goes beside it (`.json`); behind a section, to runs/reports/SECTION.json (the manual keeps no data files).

The speed comparisons (`vote_speed --against REV`) load another revision's modules beside this tree's with
`revision_modules`, time the same pages (`sample_pages`) and alternate which side goes first (`in_turn`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from bodyblocks.runtime.files import REPO_ROOT, datasets_root, write_atomic, write_json

T = TypeVar("T")
Modules = Sequence[tuple[str, str, Sequence[tuple[str, str]]]]  # (short name, path, ((module, short name), ...))
REPORTS = REPO_ROOT / "runs" / "reports"  # data behind the sections of docs/ (git ignores runs/)


def arguments(doc: str | None, *, root: bool = False, pages: int | None = None, rounds: int | None = None,
              out: str | Path | None = None, write: str | Path | bool | None = None, doc_flag: str = "--write",
              threads: int | None = None, seed: int | None = None) -> argparse.ArgumentParser:
    """The prologue every benchmark shares: its description (the docstring's first line) and the common options.

    Args:
        doc: the script's docstring; its first line is the description.
        root: add --root, the datasets folder (default bodyblocks.runtime.files.datasets_root()).
        pages, rounds, threads, seed: add that option with this default.
        out: add --out, the folder of the run's files, with this default.
        write: add `doc_flag` (--write or --doc), the report target (a file or FILE#SECTION); True: no default.
    """
    ap = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    if root:
        ap.add_argument("--root", type=Path, default=datasets_root(), help="the datasets folder")
    if pages is not None:
        ap.add_argument("--pages", type=int, default=pages, help=f"pages (default {pages})")
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds, help=f"rounds, alternating (default {rounds})")
    if threads is not None:
        ap.add_argument("--threads", type=int, default=threads, help=f"CPU threads (default {threads})")
    if seed is not None:
        ap.add_argument("--seed", type=int, default=seed)
    if out is not None:
        ap.add_argument("--out", type=Path, default=Path(out), help=f"the run's files (default {out})")
    if write is not None and write is not False:
        default = None if write is True else str(write)
        ap.add_argument(doc_flag, default=default, metavar="FILE[#SECTION]",
                        help="write the Markdown report there (a section of a manual page: FILE#SECTION)")
    return ap


def need_root(root: Path | None, script: str) -> Path:
    """The datasets folder, or exit with one line saying how to name it."""
    if root is None:
        raise SystemExit(f"{script}: no datasets folder (set BODYBLOCKS_DATASETS or pass --root)")
    return root


def replace_section(page: str, section: str, markdown: str) -> str:
    """`page` with the lines between `<!-- section: begin -->` and `<!-- section: end -->` replaced by markdown."""
    begin, end = f"<!-- {section}: begin -->", f"<!-- {section}: end -->"
    if begin not in page or end not in page:
        raise SystemExit(f"no section {section!r} ({begin} ... {end}) in the page")
    body = markdown.strip("\n").splitlines()
    if body and body[0].startswith("# "):
        body = body[1:]
    head, rest = page.split(begin, 1)
    return head + begin + "\n" + "\n".join(body).strip("\n") + "\n" + end + rest.split(end, 1)[1]


def write_report(target: str | Path | None, markdown: str, data: Any = None) -> None:
    """Write a report: a whole Markdown file (data as .json beside it) or one section of a page (see above)."""
    if not target:
        return
    name, _, section = str(target).partition("#")
    path = Path(name) if Path(name).is_absolute() else REPO_ROOT / name  # relative: to the repository's root
    if section:
        page = path
        write_atomic(page, replace_section(page.read_text(encoding="utf-8"), section, markdown))
        if data is not None:
            write_json(REPORTS / f"{section}.json", data)
    else:
        write_atomic(path, markdown if markdown.endswith("\n") else markdown + "\n")
        if data is not None:
            write_json(path.with_suffix(".json"), data)
    print(f"wrote {target}", file=sys.stderr)


def revision_modules(rev: str, modules: Modules, prefix: str) -> dict[str, types.ModuleType]:
    """Revision `rev`'s `modules` (`git show REV:PATH`, loaded under names of their own), by short name.

    The imports named in a module's list point at the copies loaded before it (list a module after those it
    imports): "MODULE" for `from MODULE import ...`, "PACKAGE import NAME" for `from PACKAGE import NAME as ...`.
    Every other import is this tree's.
    """
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


SAMPLE = REPO_ROOT / "data" / "samples" / "article-utf8.html"  # write_pages' one page
DATASETS = ("cleaneval-en", "daniel", "dragnet", "l3s-gn1", "wcxb-dev", "cleanportaleval")  # write_pages' sources


def write_round_robin(folder: Path, root: Path, sources: list[tuple[str, list[dict]]], n: int) -> int:
    """Up to `n` pages into `folder`, taken from each (dataset, records) in turn, each dataset's records spread
    evenly (every k-th first, then the rest); how many were written."""
    from bodyblocks.training.datasets import page_from_record

    pools = []
    for d, records in sources:
        step = max(1, len(records) // max(1, n // len(sources)))
        pools.append([(d, r) for r in records[::step] + [r for i, r in enumerate(records) if i % step]])
    count, k = 0, 0
    while count < n and any(k < len(p) for p in pools):
        for p in pools:
            if k < len(p) and count < n:
                d, rec = p[k]
                (folder / f"{d}-{rec['id']}.html").write_bytes(page_from_record(root / d, rec).html)
                count += 1
        k += 1
    return count


def write_pages(folder: Path, n: int) -> int:
    """`n` .html pages: round-robin over the datasets (every k-th record of each), else synthetic pages."""
    from bodyblocks.training.datasets import read_records

    folder.mkdir(parents=True, exist_ok=True)
    if n == 1:
        shutil.copy(SAMPLE, folder / SAMPLE.name)
        return 1
    root = datasets_root()
    names = [d for d in DATASETS if root is not None and (root / d / "pages.jsonl").exists()]
    if names:
        assert root is not None
        return write_round_robin(folder, root, [(d, read_records(root / d)) for d in names], n)
    import random

    from bodyblocks.training.synth import synth_page

    for i in range(n):
        (folder / f"synth-{i}.html").write_bytes(synth_page(random.Random(i))[0])
    return n


def sample_pages(n: int, prefix: str) -> list[bytes]:
    """The bytes of `n` pages: write_pages' folder of dataset pages (synthetic ones without the datasets)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    write_pages(folder, n)
    return [p.read_bytes() for p in sorted(folder.glob("*.html"))]


def in_turn(names: Sequence[T], page: int, round_: int) -> list[T]:
    """The sides in the order they run on a page: which goes first alternates from page to page and round to round."""
    return list(names) if (page + round_) % 2 == 0 else list(names)[::-1]
