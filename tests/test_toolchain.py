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
