"""The package's layout holds: no import cycle among its modules, and dependencies run one way only.

Layers, lowest first (docs/ARCHITECTURE.md): core modules (types, decode, segment, features, baselines, ...)
-> inference -> batch -> scale -> training -> annotate -> evaluation -> cli. A module may import its own layer
and those below, never those above: inference never reaches training, training never reaches evaluation or the
command line.
Every import counts, at the top of a module or inside a function (those dodge a cycle at run time, not in
the design), and so do loads by name (importlib.import_module, __import__, runpy.run_module: a name built
at run time from a package's name counts as every module of it); only those under `if TYPE_CHECKING:` are left
out. The package root (bodyblocks/__init__.py, the one-call API) sits over every layer: no module under it
imports it (the version is bodyblocks.version's).
The same holds one level up: the package never imports a benchmark or a test, a benchmark never a test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "bodyblocks"
ROOTS = ("bodyblocks", "benchmarks", "tests")  # the package, the scripts that measure it, the tests of both
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


# calls that load the module their first argument names: importlib.import_module(NAME, package=...),
# __import__(NAME), runpy.run_module(NAME); also when imported by name (`from importlib import import_module`)
_LOADERS = {"import_module", "__import__", "run_module"}


def _own_name(name: str, node: ast.expr, modules: dict[str, Path]) -> str | None:
    """What `__name__` or `__package__` stands for in module `name`, else None."""
    if isinstance(node, ast.Name) and node.id == "__name__":
        return name
    if isinstance(node, ast.Name) and node.id == "__package__":
        return name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
    return None


def _constant_prefix(name: str, node: ast.expr, modules: dict[str, Path]) -> tuple[str, bool] | None:
    """(the constant start of a module name, whether that is the whole name) of a literal, an f-string or a
    `"a." + b` sum; `__name__` and `__package__` count as constants. None: no constant start."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if (own := _own_name(name, node, modules)) is not None:
        return own, True
    if isinstance(node, ast.JoinedStr):
        prefix = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                prefix += str(part.value)
            elif isinstance(part, ast.FormattedValue) and (own := _own_name(name, part.value, modules)) is not None:
                prefix += own
            else:
                return prefix, False
        return prefix, True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _constant_prefix(name, node.left, modules)
        if left is None or not left[1]:
            return left
        right = _constant_prefix(name, node.right, modules)
        return (left[0] + right[0], right[1]) if right is not None else (left[0], False)
    return None


def _dynamic_targets(name: str, node: ast.Call, modules: dict[str, Path]) -> set[str]:
    """The package's modules that one loading call of module `name` may load: the named one; for a name built at
    run time whose constant start names a package ("pkg.sub." + x, f"pkg.sub.{x}"), every module of it."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in _LOADERS or not node.args:
        return set()
    found = _constant_prefix(name, node.args[0], modules)
    if found is None:
        return set()
    target, whole = found
    if target.startswith(".") and called == "import_module":  # relative to its package= argument
        anchor = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "package"), None)
        base = _constant_prefix(name, anchor, modules) if anchor is not None else None
        if base is None or not base[1]:
            return set()
        dots = len(target) - len(target.lstrip("."))
        parts = base[0].split(".")
        target = ".".join([*parts[: len(parts) - (dots - 1)], target[dots:]]).rstrip(".")
    if whole:
        return {target} & modules.keys()
    package = target.rpartition(".")[0]
    if package not in modules:
        return set()
    return {m for m in modules if m.startswith(target) and m.startswith(package + ".")}


def import_graph(own_packages: bool = False, src: Path = SRC, package: str = PACKAGE,
                 modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """module -> the modules it imports (a submodule importing its own package's __init__ aside, unless
    `own_packages`), of the package or of `modules` (several packages' module_files together). Loads by name
    count as imports (importlib.import_module, __import__, runpy.run_module: _dynamic_targets)."""
    modules = modules if modules is not None else module_files(src, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        graph[name] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                found = _targets(name, node, modules)
            elif isinstance(node, ast.Call):
                found = _dynamic_targets(name, node, modules)
            else:
                continue
            graph[name] |= {t for t in found if t != name and (own_packages or not name.startswith(t + "."))}
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
    """The benchmark scripts share helpers through benchmarks/common.py, which imports none of them; the hostile
    corpus's attack modules (loaded by name) share its pages through benchmarks/hostile/content.py, a leaf."""
    graph = import_graph(src=SRC.parent, package="benchmarks")
    assert "benchmarks.cli_speed" in graph and not graph["benchmarks.common"]
    assert "benchmarks.attacks.batch" in graph["benchmarks.attacks"]  # loaded by name: counted
    assert not graph["benchmarks.hostile.content"]
    assert cycles(graph) == []


MAX_BENCHMARK_LINES = 600


def test_no_benchmark_module_is_longer_than_a_reader_holds() -> None:
    """A script that does many things keeps its parts in a subpackage of its own (benchmarks/hostile/, dom/)."""
    long = {str(p.relative_to(SRC.parent)): n for p in sorted((SRC.parent / "benchmarks").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_BENCHMARK_LINES}
    assert long == {}


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


def whole_tree_graph() -> dict[str, set[str]]:
    """The import graph of the package, the benchmarks and the tests together (loads by name counted)."""
    return import_graph(modules={**module_files(SRC, PACKAGE), **module_files(SRC.parent, "benchmarks"),
                                 **module_files(SRC.parent, "tests")})


def upward_between_roots(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import from a root above a module's own (ROOTS: the package under the benchmarks under
    the tests)."""
    rank = {name: i for i, name in enumerate(ROOTS)}
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                  if rank[t.split(".")[0]] > rank[m.split(".")[0]])


def test_no_upward_import_between_the_package_the_benchmarks_and_the_tests() -> None:
    """src never imports a benchmark or a test, a benchmark never imports a test."""
    graph = whole_tree_graph()
    assert "bodyblocks.runtime.files" in graph["benchmarks.attacks.warc"]  # the graph spans the roots
    assert "benchmarks.hostile.folders" in graph["tests.test_hostile_inputs"]
    assert upward_between_roots(graph) == []
    assert upward_between_roots({"bodyblocks.cli": {"benchmarks.common"}, "benchmarks.gate": {"tests.test_gate"},
                                 "tests.test_gate": {"benchmarks.gate"}}) == [
        "benchmarks.gate -> tests.test_gate", "bodyblocks.cli -> benchmarks.common"]


def test_no_import_cycle_across_the_package_the_benchmarks_and_the_tests() -> None:
    assert cycles(whole_tree_graph()) == []


_LOADS = {  # a made-up module's source -> the modules of the made-up package `pkg` it loads
    "import importlib\nimportlib.import_module('pkg.b')": {"pkg.b"},
    "from importlib import import_module\nimport_module('pkg.b')": {"pkg.b"},
    "import importlib\nimportlib.import_module('.b', package=__package__)": {"pkg.b"},
    "import importlib\nimportlib.import_module('.b', 'pkg')": {"pkg.b"},
    "__import__('pkg.b')": {"pkg.b"},
    "import runpy\nrunpy.run_module('pkg.b', run_name='__main__')": {"pkg.b"},
    "from runpy import run_module\nrun_module('pkg.plug.x')": {"pkg.plug.x"},
    "import importlib\nfor x in 'xy':\n    importlib.import_module(f'pkg.plug.{x}')": {"pkg.plug.x", "pkg.plug.y"},
    "import importlib\nfor x in 'xy':\n    importlib.import_module(f'{__package__}.plug.{x}')": {"pkg.plug.x",
                                                                                               "pkg.plug.y"},
    "import importlib\nfor x in 'xy':\n    importlib.import_module('pkg.plug.' + x)": {"pkg.plug.x", "pkg.plug.y"},
    "import importlib\ndef load(name):\n    return importlib.import_module(name)": set(),  # known at run time only
    "import importlib\nimportlib.import_module('json')": set(),  # not the package's
}


@pytest.mark.parametrize("source", list(_LOADS))
def test_the_checker_counts_loads_by_name(tmp_path: Path, source: str) -> None:
    """Each way of loading a module by name is an edge of the graph: a made-up package's module is parsed."""
    for rel in ("pkg/__init__.py", "pkg/b.py", "pkg/plug/__init__.py", "pkg/plug/x.py", "pkg/plug/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "a.py").write_text(source + "\n", encoding="utf-8")
    assert import_graph(src=tmp_path, package="pkg")["pkg.a"] == _LOADS[source]


def test_a_package_loading_its_own_modules_by_name_is_seen(tmp_path: Path) -> None:
    """benchmarks/attacks/__init__.py's form: f"{__name__}.{name}" in a package's __init__ loads its modules; a
    module of it importing back the module that imports the package closes a loop, which is found."""
    (tmp_path / "pkg" / "plug").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "driver.py").write_text("from pkg.plug import run\n", encoding="utf-8")
    (tmp_path / "pkg" / "plug" / "__init__.py").write_text(
        "import importlib\ndef run(names):\n    return [importlib.import_module(f'{__name__}.{n}') for n in names]\n",
        encoding="utf-8")
    (tmp_path / "pkg" / "plug" / "x.py").write_text("from pkg.driver import helper\n", encoding="utf-8")
    graph = import_graph(src=tmp_path, package="pkg")
    assert graph["pkg.plug"] == {"pkg.plug.x"}
    assert cycles(graph) == [["pkg.driver", "pkg.plug", "pkg.plug.x"]]


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
