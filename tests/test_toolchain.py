"""The public API is exactly what `history/__init__.py` exports.

Lint, format and strict type checks run in `.ci/run`, before the tests: `ruff check`,
`ruff format --check` and `mypy`.
"""

from __future__ import annotations

from types import ModuleType


def test_the_public_api_is_what_init_exports() -> None:
    import history

    assert isinstance(history.__all__, tuple)
    public = {
        name
        for name in dir(history)
        if not name.startswith("_") and not isinstance(getattr(history, name), ModuleType)
    }
    assert public == set(history.__all__)
    assert all(hasattr(history, name) for name in history.__all__)


def test_every_package_of_the_tree_is_installed() -> None:
    """`pyproject.toml` lists the packages a wheel holds: a new folder of modules not listed
    there would be missing from an install that is not editable."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(path.parent.relative_to(root).parts)
        for path in (root / "history").rglob("__init__.py")
    }
    assert found, "no package found"
    assert found <= listed, sorted(found - listed)
