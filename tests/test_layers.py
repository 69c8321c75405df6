"""The import rules of the layers (docs/architecture.md, "How it is built"), read from the source: who may import
whom, and no import circle. (core's and ports' own rules are in tests/test_static.py.)

    core/                   ports, pydantic, the standard library (no I/O)
    ports/                  nothing of ours but ports
    adapters/               core, ports, other adapters -- never composition
    composition/service/    the roles: core, ports, service -- never an adapter, the root or an entry point
    composition/root/       everything but the entry points: it is the one place adapters are built
    composition/entrypoints/  root, service, core, ports; of the adapters only their own sink
                            (adapters/sinks) and a simulated agy (adapters/simulator), never one that
                            reaches agy (those the root builds, chosen by the version gate)

An import under ``if TYPE_CHECKING:`` names a type for an annotation and builds nothing: it is not
counted. Imports inside functions (lazy ones) are.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = "agy_harness"
LAYERS = ("core", "ports", "adapters", "composition")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[:3] == ["composition", "entrypoints", "omnigent_plugin"]:  # installed under omnigent's name
        return ".".join(["omnigent.community.harness.agy_harness", *parts[3:]])
    return ".".join([PKG, *parts])


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")}


MODULES = _modules()


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    # "from pkg import name": a submodule when there is one, else a name of pkg
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def imports_of(module: str) -> Iterator[str]:
    """The modules ``module`` imports at run time (ours resolved to module names)."""
    return iter(_imports_of(module, _type_checking_blocks))


@functools.cache
def _imports_of(module: str, type_checking_blocks: Callable[[ast.AST], set[int]]) -> tuple[str, ...]:
    """:func:`imports_of`, read once per process for each way of telling type-only imports (the
    tests here read every module several times; walking the trees was most of their CPU)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = type_checking_blocks(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.extend(_resolve(module, path, node))
    return tuple(found)


def _ours(name: str) -> str | None:
    """The module of ours ``name`` is (or is inside), if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _layer(module: str) -> str:
    if module.startswith("omnigent.community.harness.agy_harness"):
        return "entrypoints"
    parts = module.split(".")
    if parts[1] == "composition" and len(parts) > 2 and parts[2] in ("service", "root", "entrypoints"):
        return parts[2]
    return parts[1]  # core, ports, adapters, composition (its __init__ and cli)


def _violations(layer: str, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for module in MODULES:
        if _layer(module) != layer:
            continue
        for name in imports_of(module):
            target = _ours(name)
            if target is None or target == module:
                continue
            if not any(target == a or target.startswith(a + ".") for a in allowed):
                bad.append(f"{module} imports {target}")
    return bad


SERVICE = f"{PKG}.composition.service"
ROOT_ = f"{PKG}.composition.root"
ENTRY = f"{PKG}.composition.entrypoints"
CORE, PORTS, ADAPTERS = f"{PKG}.core", f"{PKG}.ports", f"{PKG}.adapters"


@pytest.mark.parametrize(
    ("layer", "allowed"),
    [
        ("core", (CORE, PORTS)),
        ("ports", (PORTS,)),
        ("adapters", (ADAPTERS, CORE, PORTS)),
        ("service", (SERVICE, CORE, PORTS)),
        ("root", (ROOT_, SERVICE, ADAPTERS, CORE, PORTS)),
        (
            "entrypoints",
            (
                ENTRY,
                "omnigent.community.harness.agy_harness",
                ROOT_,
                SERVICE,
                CORE,
                PORTS,
                f"{ADAPTERS}.sinks",  # the front end's own sink (and its presentation helpers)
                f"{ADAPTERS}.simulator",  # a simulated agy (demo, sim, --sim), not an adapter of the harness
            ),
        ),
    ],
)
def test_each_layer_imports_only_what_its_rule_allows(layer: str, allowed: tuple[str, ...]) -> None:
    assert [m for m in MODULES if _layer(m) == layer], f"no module in layer {layer}"
    assert _violations(layer, allowed) == []


def test_the_service_uses_no_third_party_package() -> None:
    """The roles are asyncio over ports: no HTTP client, no tmux, no DI container."""
    foreign = [
        f"{module} imports {name}"
        for module in MODULES
        if _layer(module) == "service"
        for name in imports_of(module)
        if _ours(name) is None and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert foreign == []


def test_no_import_circle() -> None:
    """Between any of our modules, lazy imports included (attach <-> demo, container <-> session were)."""
    graph = {m: {t for n in imports_of(m) if (t := _ours(n)) and t != m} for m in MODULES}
    # a package's __init__ is imported with each of its modules: not an edge back to itself
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not module.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in graph:
        if module not in index:
            visit(module)
    assert circles == []


def test_no_import_circle_even_through_annotations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A circle through ``if TYPE_CHECKING:`` imports builds nothing, but a reader still has to hold
    both modules at once (adapters/policy/shell.py and wrappers.py were one: issue 47): none either."""
    monkeypatch.setattr(sys.modules[__name__], "_type_checking_blocks", lambda tree: set())
    test_no_import_circle()


def test_every_import_of_ours_names_a_module_that_exists() -> None:
    """(A relative import one dot short still parses: it is caught here, not when the code runs.)"""
    missing = [
        f"{module} imports {name}"
        for module in MODULES
        for name in imports_of(module)
        if name.startswith((f"{PKG}.", "omnigent.community.harness.agy_harness")) and name not in MODULES
    ]
    assert missing == []


def test_the_rules_see_the_imports_they_judge() -> None:
    """The reader of imports is not blind: known edges are found (relative, lazy, and a type-only one
    that is not counted)."""
    assert f"{ROOT_}.container" in set(imports_of(f"{ROOT_}.session"))
    assert f"{ADAPTERS}.tmux" in {_ours(n) for n in imports_of(f"{ROOT_}.lazy_adapters")}  # lazy
    assert f"{SERVICE}.emitter" in set(imports_of(f"{SERVICE}.gate_bridge"))  # relative
    record = {_ours(n) for n in imports_of(f"{ENTRY}.record")}
    assert f"{ADAPTERS}.rpc.client" not in record  # only under TYPE_CHECKING there


MAX_MODULE_LINES = 400
SIZED = (*LAYERS, "benchmarks")


def test_every_module_is_at_most_400_lines() -> None:
    """DEVELOPERS.md: modules stay <= ~400 lines, each named for its job -- a module past that is split
    by job (issue 47), not let grow. The offenders are listed, largest first."""
    offenders = sorted(
        (
            (count, str(path.relative_to(ROOT)))
            for top in SIZED
            for path in (ROOT / top).rglob("*.py")
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        ),
        reverse=True,
    )
    listed = ", ".join(f"{path} {count}" for count, path in offenders)
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines: {listed}"
