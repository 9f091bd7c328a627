"""The layers hold: the processors are pure, importing only the core's data and seams."""

from __future__ import annotations

import ast
from pathlib import Path

PROCESSORS = Path(__file__).parent.parent / "processors"
ALLOWED = {
    "history.contract",
    "history.errors",
    "history.lines",
    "history.processing",
    "history.settings",
}
"""What a processor may import of `history` (besides other processors)."""


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_processors_import_no_store_summarizer_or_plugin() -> None:
    modules = sorted(PROCESSORS.glob("*.py"))
    assert modules
    for path in modules:
        ours = {name for name in _imported(path) if name.split(".")[0] == "history"}
        assert ours <= ALLOWED, f"{path.name} imports {sorted(ours - ALLOWED)}"
