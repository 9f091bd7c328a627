"""The shape docs/ARCHITECTURE.md describes, checked on the tree: layers, cycles, sizes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LONGEST = 420
"""About 400 lines a module: a module past it holds two things."""


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
    ("data", ("history.contract", "history._checks", "history.processing", "history.settings",
              "history.lines", "history.errors", "history.terms", "history.limits",
              "history.generated")),
    ("processors", ("history.processors",)),
    ("store", ("history.store",)),
    ("plugin", ("history.summarizer", "history.breaker", "history.asking", "history.plugin",
                "history.lane",
                "history.batch", "history.pins", "history.rebuilding", "history.carry",
                "history._carry_lines", "history.metering", "history.worker",
                "history.retracting", "history.names", "history.generations", "history.renaming",
                "history.reconsolidating", "history.adopting", "history.again")),
    ("agent", ("history.agent",)),
    ("ingest", ("history.ingest",)),
    ("command", ("history.cli", "history.trace", "history.viewer")),
)  # fmt: skip
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
def test_a_module_holds_one_thing(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= LONGEST, f"{MODULES[name].relative_to(ROOT)} has {lines} lines"


PROCESSORS_MAY_IMPORT = {
    "history.contract",
    "history.processing",
    "history.lines",
    "history.settings",
    "history.errors",
}
"""The data they take and return, and the seam typing the callbacks they are handed."""


def test_processors_take_data_and_return_changes() -> None:
    for name, path in MODULES.items():
        if not name.startswith("history.processors"):
            continue
        used = {m for m in inside(imports(name, path)) if not m.startswith("history.processors")}
        wider = {m for m in used if m not in PROCESSORS_MAY_IMPORT and m != "history"}
        assert not wider, f"{name} imports {sorted(wider)}"


def test_the_store_never_imports_a_model() -> None:
    for name, path in MODULES.items():
        if name.startswith("history.store"):
            used = imports(name, path)
            assert not {m for m in used if m.startswith(("history.summarizer", "pydantic_ai"))}, (
                name
            )


def test_reading_files_never_imports_the_plugin() -> None:
    forbidden = ("history.plugin", "history.trace", "history.store", "history.cli")
    for name, path in MODULES.items():
        if name.startswith("history.ingest"):
            used = inside(imports(name, path, lazy=False))
            assert not {m for m in used if m.startswith(forbidden)}, f"{name} imports {used}"


def test_collections_hold_sql_only() -> None:
    # A top-level `collections/__init__.py` would shadow the standard library's collections.
    assert not (ROOT / "collections" / "__init__.py").exists()
    assert {p.suffix for p in (ROOT / "collections").iterdir()} == {".sql"}
