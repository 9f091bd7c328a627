"""The toolchain runs with the tests: lint, format and strict types, as CI runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["history", "processors", "tests", "benchmarks", "examples"]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", *SOURCES),
        ("ruff", "format", "--check", *SOURCES),
        ("mypy",),
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_the_code_passes(command: tuple[str, ...]) -> None:
    result = run(*command)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_public_api_is_what_init_exports() -> None:
    import history

    assert isinstance(history.__all__, tuple)
    public = {name for name in dir(history) if not name.startswith("_")}
    modules = {"cli", "contract", "errors", "lines", "plugin", "processors", "settings", "store",
               "summarizer", "trace", "worker"}  # fmt: skip
    assert public - modules - set(history.__all__) == set()
    assert all(hasattr(history, name) for name in history.__all__)
