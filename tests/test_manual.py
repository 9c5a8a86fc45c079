"""The manual describes what ships: package docstrings list their modules, CHANGELOG lines stay short, the pages
that used to carry the history of rounds stay short, and every marked section a benchmark writes is in its page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "bodyblocks"
MAX_BULLET = 200  # characters of one CHANGELOG line
MAX_PAGE_LINES = 200
# `--write docs/PAGE.md#SECTION` or `--section docs/PAGE.md#SECTION` in a benchmark's text
_WRITTEN = re.compile(r"(docs/[A-Z_]+\.md)#([a-z0-9-]+)")


def listed_modules(package: Path) -> list[str]:
    """The modules a package's docstring lists, one a line as `  name.py  what it does`."""
    init = (package / "__init__.py").read_text(encoding="utf-8")
    doc = init.split('"""')[1]
    return re.findall(r"^\s+(\w+)\.py\s", doc, re.M)


@pytest.mark.parametrize("name", ["classify", "extraction", "loading", "capture"])
def test_a_package_docstring_lists_every_module_it_has(name: str) -> None:
    package = PACKAGE / name
    modules = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
    assert sorted(listed_modules(package)) == modules


def test_every_changelog_line_is_short() -> None:
    lines = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
    long = [f"line {i}: {len(line)} characters" for i, line in enumerate(lines, 1)
            if line.startswith("- ") and len(line) > MAX_BULLET]
    assert not long, long


@pytest.mark.parametrize("page", ["GENERALIZATION.md", "CONVENTION.md"])
def test_the_pages_of_measurements_state_how_things_are_in_few_lines(page: str) -> None:
    assert len((ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()) <= MAX_PAGE_LINES


def test_every_section_a_benchmark_writes_is_marked_in_its_page() -> None:
    wanted = {m.groups() for f in (ROOT / "benchmarks").rglob("*.py")
              for m in _WRITTEN.finditer(f.read_text(encoding="utf-8"))}
    assert wanted  # the benchmarks name their sections
    for page, section in sorted(wanted):
        text = (ROOT / page).read_text(encoding="utf-8")
        begin, end = f"<!-- {section}: begin -->", f"<!-- {section}: end -->"
        assert text.count(begin) == text.count(end) == 1 and text.index(begin) < text.index(end), (page, section)


def benchmark_scripts(root: Path = ROOT) -> list[Path]:
    """The benchmarks one runs: top-level scripts with a `__main__` block, and shell scripts."""
    return sorted([p for p in (root / "benchmarks").glob("*.py") if 'if __name__ == "__main__"' in p.read_text(
        encoding="utf-8")] + list((root / "benchmarks").glob("*.sh")))


def uncited(root: Path = ROOT) -> list[str]:
    """Benchmark scripts neither README.md nor docs/*.md names (as benchmarks.NAME or benchmarks/NAME)."""
    manual = "\n".join(p.read_text(encoding="utf-8") for p in [root / "README.md", *(root / "docs").glob("*.md")])
    return [p.name for p in benchmark_scripts(root)
            if not re.search(rf"benchmarks[./]{re.escape(p.stem)}\b", manual)]


def test_every_benchmark_script_is_in_the_manual(tmp_path: Path) -> None:
    """What the manual cites, nothing else: a script no page names is lab material of a dropped experiment."""
    assert len(benchmark_scripts()) > 20
    assert uncited() == []
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("python -m benchmarks.cited_one\n", encoding="utf-8")
    (tmp_path / "docs" / "X.md").write_text("see benchmarks/cited_two.sh\n", encoding="utf-8")
    for name in ("cited_one.py", "forgotten.py", "cited_two.sh", "lab.sh"):
        (tmp_path / "benchmarks" / name).write_text('if __name__ == "__main__":\n    pass\n', encoding="utf-8")
    (tmp_path / "benchmarks" / "helper.py").write_text("X = 1\n", encoding="utf-8")  # no script: not asked
    assert uncited(tmp_path) == ["forgotten.py", "lab.sh"]
