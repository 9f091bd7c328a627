"""The shape docs/ARCHITECTURE.md describes, checked on the tree: layers, cycles, cohesion."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (processors/ as `history.processors`)."""
    found: dict[str, Path] = {}
    for base, package in (
        (ROOT / "history", "history"),
        (ROOT / "processors", "history.processors"),
    ):
        for path in sorted(base.rglob("*.py")):
            if "collections" in path.relative_to(base).parts:
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run, at import time or later in a function: all but type-only ones."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _type_checking(child):
            yield from (i for n in child.orelse for i in _run(n))
        else:
            yield from _run(child)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports run when a module is imported: not in functions, not under TYPE_CHECKING."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _type_checking(node):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)


def imports(name: str, path: Path, *, lazy: bool = True) -> set[str]:
    """The modules `name` imports (absolute names): all that run, or those at import time only."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = _run(tree) if lazy else _top_level(tree.body)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {
        m.replace("processors.", "history.processors.", 1) if m.startswith("processors.") else m
        for m in found
    }


MODULES = modules()


def inside(found: set[str]) -> set[str]:
    """The package's own modules among imported names."""
    return {m for m in found if m in MODULES}


def test_no_module_imports_in_a_circle() -> None:
    # Imports inside functions count: a lazy import (kept off the start-up path) is fine, one
    # that only dodges a cycle is not.
    graph = {name: inside(imports(name, path)) - {name} for name, path in MODULES.items()}
    # A package's __init__ importing its own modules is how packages work, not a cycle.
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(f"{m}.") or m == name}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("an import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


FLOORS = (
    (
        "data",
        (
            "history.contract",
            "history._checks",
            "history.processing",
            "history.settings",
            "history.lines",
            "history.errors",
            "history._languages",
            "history._limits",
            "history._generated",
        ),
    ),
    ("processors", ("history.processors",)),
    ("store", ("history.store",)),
    (
        "plugin",
        (
            "history.summarizer",
            "history.breaker",
            "history.plugin",
            "history._lane",
            "history.pins",
            "history.rebuilding",
            "history.carry",
            "history._carry_lines",
            "history.metering",
            "history._spaces",
            "history._worker",
            "history._retracting",
            "history._names",
            "history._generations",
            "history._renaming",
            "history.reconsolidating",
            "history._adopting",
            "history._again",
        ),
    ),
    ("agent", ("history.agent",)),
    ("ingest", ("history.ingest",)),
    ("command", ("history.cli", "history._trace", "history.viewer")),
)
"""The floors, lowest first. Reading files sits above the agent's package for its tool steps'
form (`history.agent.steps`); the trace is `simulate`'s engine: it reads a file and runs the
plugin."""


def floor(name: str) -> int:
    for level, (_, prefixes) in enumerate(FLOORS):
        if any(name == p or name.startswith(f"{p}.") for p in prefixes):
            return level
    raise AssertionError(f"{name} is on no floor: place it in FLOORS and docs/ARCHITECTURE.md")


def test_a_lower_floor_never_imports_a_higher_one() -> None:
    for name, path in MODULES.items():
        if name == "history":  # the public API re-exports every floor
            continue
        above = {
            m for m in inside(imports(name, path)) if m != "history" and floor(m) > floor(name)
        }
        assert not above, f"{name} ({FLOORS[floor(name)][0]}) imports {sorted(above)}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_says_the_one_thing_it_holds(name: str) -> None:
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text())) or ""
    assert doc.strip(), f"{MODULES[name].relative_to(ROOT)} does not say what it holds"


def private_names(name: str, path: Path) -> set[str]:
    """The private names (`_x`, not modules) `name` imports from the package's other modules."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _run(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = (node.module or "").replace("processors", "history.processors", 1)
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and module in MODULES and f"{module}.{alias.name}" not in MODULES:
                found.add(f"{module}.{alias.name}")
    return found


def test_what_a_module_keeps_private_no_other_module_uses() -> None:
    # One concept a module: a private name another module needs is the concept split in two.
    reached = {name: private_names(name, path) for name, path in MODULES.items()}
    assert {name: found for name, found in reached.items() if found} == {}


def test_reaching_into_a_private_name_is_found(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("from .lines import _private\nfrom . import _checks\n")
    assert private_names("history.probe", path) == {"history.lines._private"}


PUBLIC = {
    # what `history/__init__` exports from, and the packages that hold it
    "history",
    "history.agent",
    "history.agent.capability",
    "history.agent.lookup",
    "history.agent.prompt",
    "history.agent.rendering",
    "history.breaker",
    "history.carry",
    "history.contract",
    "history.errors",
    "history.metering",
    "history.pins",
    "history.plugin",
    "history.rebuilding",
    "history.reconsolidating",
    "history.settings",
    "history.store",
    "history.summarizer",
    # what the docs and examples tell users to import
    "history.lines",
    "history.processing",
    "history.processors",
    "history.processors.compact",
    "history.processors.summarize",
    "history.processors.weight",
    "history.agent.steps",
    "history.agent.providers",
    "history.agent.caching",
    "history.store.sqlite",
    "history.store.postgres",
    # the packages of the command line, reading files and the viewer (their modules private)
    "history.cli",
    "history.ingest",
    "history.viewer",
}
"""The modules users may import. Every other module's name starts with an underscore."""


def test_a_module_is_public_only_when_users_import_it() -> None:
    public = {
        name for name in modules() if not any(part.startswith("_") for part in name.split("."))
    }
    assert public == PUBLIC, (
        f"public but not in PUBLIC: {sorted(public - PUBLIC)}; "
        f"in PUBLIC but private or gone: {sorted(PUBLIC - public)}"
    )
