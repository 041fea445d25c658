"""The house in layers, read from the source by `ast` (imports at module level and inside
functions alike): every module of strata_core lies in a layer, no layer imports one above it,
and no two packages import each other, directly or around a ring."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import strata_core

PACKAGE = Path(strata_core.__file__).parent
#: the top level's own modules: the ground floor every layer may use
GROUND = {
    "strata_core",
    "strata_core.answer_cache",
    "strata_core.archdb",
    "strata_core.bounded",
    "strata_core.child",
    "strata_core.commands",
    "strata_core.digits",
    "strata_core.errors",
    "strata_core.files",
    "strata_core.library_search",
    "strata_core.log",
    "strata_core.native_calls",
    "strata_core.people",
    "strata_core.process_group",
    "strata_core.q8",
    "strata_core.stopping",
    "strata_core.streams",
    "strata_core.trust",
}
#: the console script and `python -m strata_core`, above every command
ENTRY = {"strata_core.launcher", "strata_core.__main__"}
#: each package's floor (docs/design.md, "Layers": api <- plan <- run <- cli, the backends
#: and the tables below plan); a package may import its own floor and those below it
FLOORS = {
    "api": 1,
    "detect": 2,
    "gpu": 2,
    "hip": 2,
    "cuda": 2,
    "host": 2,
    "blas": 2,
    "tuning": 2,
    "plan": 3,
    "run": 4,
    "testing": 4,
    "cli": 5,
}
GROUND_FLOOR, ENTRY_FLOOR = 0, 6
#: what the house still does against the rules above, each with its reason
ALLOWED: dict[str, str] = {}
#: the one module that builds the commands' JSON answers and says their schema version
ANSWERS = "strata_core.cli.answers"
#: what writes JSON besides it (a module, or a module's function), each with its reason
JSON_WRITERS = {
    "strata_core.child": "a probe child's answer to its parent",
    "strata_core.run.gpu_child": "the GPU child's answer to the run",
    "strata_core.run.card_tuning": "the calibration child's answer to the tune command",
    "strata_core.hip.build_hook": "the kernel library's manifest, written by the build",
    "strata_core.plan.config.with_env": "the server JSON run config that tune --switches rewrites",
}


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Each module of the strata_core tree at ``package``, by its dotted name."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = ["strata_core", *path.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The strata_core modules that ``name`` imports anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [
                f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                yield target


def room(name: str) -> str | None:
    """The layer a module lies in: its package, the ground, the entry, or None."""
    if name in GROUND:
        return "ground"
    if name in ENTRY:
        return "entry"
    parts = name.split(".")
    if len(parts) > 2 and parts[1] in FLOORS:
        return parts[1]
    if len(parts) == 2 and parts[1] in FLOORS:
        return parts[1]
    return None


def floor(layer: str) -> int:
    return {"ground": GROUND_FLOOR, "entry": ENTRY_FLOOR, **FLOORS}[layer]


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def rings(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def violations(package: Path = PACKAGE) -> set[str]:
    """What the strata_core tree at ``package`` does against the layers."""
    edges = graph(package)
    found = {f"{name}: in no layer" for name in edges if room(name) is None}
    packages: dict[str, set[str]] = {}
    for name, targets in edges.items():
        here = room(name)
        for target in targets:
            there = room(target)
            if here is None or there is None or here == there:
                continue
            packages.setdefault(here, set()).add(there)
            if floor(there) > floor(here):
                found.add(f"{name} -> {target}: {here} imports {there}, a higher layer")
    found |= {"ring: " + " <-> ".join(group) for group in rings(packages)}
    return found


def plant(root: Path, sources: dict[str, str]) -> Path:
    """A strata_core tree under ``root``: each path inside it with its source."""
    for relative, source in sources.items():
        path = root / "strata_core" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root / "strata_core"


def test_the_layer_checker_sees_function_local_and_relative_imports(tmp_path):
    """The checker the house is held to, on a planted house: an upward import inside a
    function, written relative or absolute, is a violation, and a relative import of a
    module by name (``from ..detect import kfd``) makes the two packages a ring."""
    house = plant(
        tmp_path,
        {
            "__init__.py": "",
            "cli/__init__.py": "",
            "cli/main.py": "from ..detect import kfd as _kfd\n",
            "detect/__init__.py": "",
            "detect/kfd.py": "def walk():\n    from ..cli.main import main\n",
            "plan/__init__.py": "",
            "plan/pipeline.py": "def make():\n    import strata_core.cli.main\n",
        },
    )
    assert violations(house) == {
        "strata_core.detect.kfd -> strata_core.cli.main: detect imports cli, a higher layer",
        "strata_core.plan.pipeline -> strata_core.cli.main: plan imports cli, a higher layer",
        "ring: cli <-> detect",
    }


def json_written(name: str, path: Path) -> Iterator[str]:
    """Where ``name`` writes JSON or names the answers' schema version: the module, or
    ``module.function`` inside a function (the outermost)."""

    def visit(node: ast.AST, where: str) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if where == name and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = f"{name}.{child.name}"
            if _writes_json(child):
                yield inner
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(), str(path)), name)


def _writes_json(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        return isinstance(base, ast.Name) and base.id == "json" and node.func.attr in (
            "dump", "dumps"
        )  # fmt: skip
    if isinstance(node, ast.ImportFrom) and node.module == "json":
        return any(alias.name in ("dump", "dumps") for alias in node.names)
    if isinstance(node, ast.Constant):
        return node.value == "schema_version"
    if isinstance(node, ast.Name | ast.alias):
        return (node.id if isinstance(node, ast.Name) else node.name) == "SCHEMA_VERSION"
    return isinstance(node, ast.Attribute) and node.attr == "SCHEMA_VERSION"


def test_the_json_reader_sees_a_write_inside_a_function_and_the_schema_version(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import json\nfrom .answers import SCHEMA_VERSION\n"
        "def f():\n    def g():\n        return json.dumps({'schema_version': 1})\n"
    )
    assert list(json_written("m", source)) == ["m", "m.f", "m.f"]


def test_only_the_answers_module_builds_json_answers():
    """Every other writer of JSON is one of JSON_WRITERS, and each of those still writes."""
    found = {
        where
        for name, path in modules().items()
        if name != ANSWERS
        for where in json_written(name, path)
    }
    covered = {w: next((k for k in JSON_WRITERS if f"{w}.".startswith(f"{k}.")), w) for w in found}
    assert set(covered.values()) == set(JSON_WRITERS)


def test_only_the_entry_imports_the_launcher():
    importers = {name for name, targets in graph().items() if "strata_core.launcher" in targets}
    assert importers <= ENTRY


def test_a_ring_of_packages_is_found():
    assert rings({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert rings({"a": {"b"}, "b": set()}) == []


def test_every_module_in_a_layer_imports_downward_only_and_no_packages_form_a_ring():
    assert violations() == set(ALLOWED)


def test_plugins_and_the_example_import_the_core_through_its_api_only():
    root = PACKAGE.parent
    sources = [*root.glob("plugins/*/src/**/*.py"), *root.glob("examples/*/src/**/*.py")]
    assert sources
    outside = {
        f"{path.relative_to(root)}: {target}"
        for path in sources
        for target in _absolute_imports(path)
        if target.startswith("strata_core") and target != "strata_core.api"
    }
    assert outside == set()


def test_the_api_face_exports_what_a_plugin_imports_and_is_typed():
    import strata_core.api as api

    assert [name for name in api.__all__ if not hasattr(api, name)] == []
    assert {"ArchPlugin", "hookimpl", "Device", "RunContext", "Rule", "Switch"} <= set(api.__all__)
    assert (PACKAGE / "py.typed").is_file()


def _absolute_imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module


def test_no_modules_form_a_ring_not_even_through_type_only_imports():
    """Two modules that import each other (a type named only for the checker counts) are one
    module in two files; the house has none."""
    assert rings(graph()) == []
