"""The package's layout holds: no import cycle among its modules, and dependencies run one way only.

Layers, lowest first (docs/ARCHITECTURE.md): core modules (types, decode, segment, features, baselines, ...)
-> inference -> batch -> scale -> training -> annotate -> evaluation -> cli. A module may import its own layer
and those below, never those above: inference never reaches training, training never reaches evaluation or the
command line.
Every import counts, at the top of a module or inside a function (those dodge a cycle at run time, not in
the design); only imports under `if TYPE_CHECKING:` are left out. The package root (bodyblocks/__init__.py, the
one-call API) sits over every layer: no module under it imports it (the version is bodyblocks.version's).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "bodyblocks"
LAYERS = ("core", "classify", "extraction", "loading", "batch", "scale", "training", "annotate", "evaluation", "cli")


def module_files(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package (under `src`) by dotted name (a package by its __init__)."""
    out = {}
    for f in sorted((src / package).rglob("*.py")):
        parts = f.relative_to(src).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:` (annotations only: never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(sub) for sub in ast.walk(node))
    return skip


def _targets(name: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package's modules that one import statement of module `name` loads."""
    if isinstance(node, ast.Import):
        found = {a.name for a in node.names}
    else:
        base = node.module or ""
        if node.level:
            here = name.split(".") if modules[name].name == "__init__.py" else name.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join([*here, base] if base else here)
        found = {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return {m for m in found if m in modules}


def import_graph(own_packages: bool = False, src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports (a submodule importing its own package's __init__ aside,
    unless `own_packages`)."""
    modules = module_files(src, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        graph[name] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
                graph[name] |= {t for t in _targets(name, node, modules)
                                if t != name and (own_packages or not name.startswith(t + "."))}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    """The layer of a module: its subpackage when that is a layer, else core (the package root and
    `python -m bodyblocks` are its API, over every layer)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "api"
    return parts[1] if parts[1] in LAYERS else "core"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import of a module from a layer above its own."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                  if layer(m) != "api" and layer(t) != "api" and rank[layer(t)] > rank[layer(m)])


def imports_of_the_root(graph: dict[str, set[str]]) -> list[str]:
    """'a -> bodyblocks' for every module under the API that imports the package root (its own parent
    package's __init__ counts: `from bodyblocks import __version__` in inference is an upward import)."""
    return sorted(f"{m} -> {PACKAGE}" for m, targets in graph.items() if PACKAGE in targets and layer(m) != "api")


def test_no_import_cycle_among_the_packages_modules() -> None:
    assert cycles(import_graph()) == []


def test_no_import_cycle_among_the_benchmarks() -> None:
    """The benchmark scripts share helpers through benchmarks/common.py, which imports none of them."""
    graph = import_graph(src=SRC.parent, package="benchmarks")
    assert "benchmarks.cli_speed" in graph and not graph["benchmarks.common"]
    assert cycles(graph) == []


def test_no_import_cycle_among_the_tests() -> None:
    """Test modules share helpers by importing one another (tests.test_onnx's _NO_TORCH, ...), never in a loop."""
    graph = import_graph(src=SRC.parent, package="tests")
    assert "tests.test_onnx" in graph["tests.test_packaging"]
    assert cycles(graph) == []


def test_dependencies_run_one_way_through_the_layers() -> None:
    graph = import_graph()
    assert {layer(m) for m in graph} >= {"core", *LAYERS}  # every layer holds modules
    assert upward_imports(graph) == []


def test_no_module_under_the_api_imports_the_package_root() -> None:
    """The version comes from bodyblocks.version, a leaf: inference saving a checkpoint, evaluation writing a
    report and the command line's --version never reach up to bodyblocks/__init__.py."""
    graph = import_graph(own_packages=True)
    assert imports_of_the_root(graph) == []
    assert "bodyblocks.version" in graph["bodyblocks.classify.model"] | graph["bodyblocks.classify.trees"]
    assert graph["bodyblocks.version"] == set()  # a leaf


def test_the_package_version_is_pyprojects() -> None:
    import tomllib

    from bodyblocks import __version__
    from bodyblocks.version import __version__ as leaf

    project = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert __version__ == leaf == project["version"]


def test_the_checks_see_cycles_and_upward_imports() -> None:
    """The two checks above can fail: a made-up graph with a cycle and an upward import is caught."""
    graph = {"bodyblocks.page.segment": {"bodyblocks.classify.model"},
             "bodyblocks.classify.model": {"bodyblocks.page.segment"},
             "bodyblocks.training.loop": {"bodyblocks.cli"}, "bodyblocks.cli": set()}
    assert cycles(graph) == [["bodyblocks.classify.model", "bodyblocks.page.segment"]]
    assert upward_imports(graph) == ["bodyblocks.page.segment -> bodyblocks.classify.model",
                                     "bodyblocks.training.loop -> bodyblocks.cli"]
    assert imports_of_the_root({"bodyblocks.classify.model": {"bodyblocks"}, "bodyblocks.__main__": {"bodyblocks"},
                                "bodyblocks": set()}) == ["bodyblocks.classify.model -> bodyblocks"]


@pytest.mark.parametrize("name", ["bodyblocks.extraction.extractor", "bodyblocks.batch.runner"])
def test_function_level_imports_count(name: str) -> None:
    """Imports inside functions are in the graph (they are how cycles used to hide)."""
    graph = import_graph()
    assert graph[name], name
    assert "bodyblocks.classify.model_scorer" in graph["bodyblocks.loading.checkpoints"]  # a lazy import


def test_no_module_name_is_used_twice() -> None:
    """Each module's file name is one room's alone (`roles` in training and in extraction read as one thing)."""
    names: dict[str, list[str]] = {}
    for name, path in module_files().items():
        if path.name != "__init__.py":
            names.setdefault(path.stem, []).append(name)
    assert {k: v for k, v in names.items() if len(v) > 1} == {}


def test_the_rooms_are_the_pipelines_stages() -> None:
    """The classifier, the extract stage and loading are rooms of their own, in that order of layers."""
    graph = import_graph()
    assert {"classify", "extraction", "loading"} <= {layer(m) for m in graph}
    assert LAYERS.index("classify") < LAYERS.index("extraction") < LAYERS.index("loading") < LAYERS.index("batch")
