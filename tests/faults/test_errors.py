"""The error family as `history/errors.py` draws it: every error the code defines is in the
tree, and a closed History is not a store failure."""

from __future__ import annotations

import ast
import re

import pytest

from history import ClosedError, History, HistoryError, HistorySettings, StoreError, errors

from ..conftest import message
from ..test_layers import MODULES

pytestmark = pytest.mark.anyio


def defined_errors() -> set[str]:
    """The exception classes defined in the package: subclasses of Exception, found by name."""
    classes = [
        node
        for path in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    ]
    found = {"Exception", "ValueError", "LookupError"}
    while True:
        more = {
            c.name
            for c in classes
            if any(isinstance(b, ast.Name) and b.id in found for b in c.bases)
        }
        if more <= found:
            return more
        found |= more


def test_every_error_the_code_defines_is_drawn_in_the_tree() -> None:
    doc = errors.__doc__ or ""
    drawn = {*re.findall(r"[─└├]── (\w+)", doc), *re.findall(r"^(\w+Error)$", doc, re.M)}
    assert defined_errors() == drawn


def test_the_tree_drawing_is_read() -> None:
    assert {"HistoryError", "Exhausted", "Below", "Vanished", "ClosedError"} <= defined_errors()


async def test_a_closed_history_is_not_a_store_failure(tmp_path: object) -> None:
    history = History(HistorySettings(summarizer="scripted"), store=f"{tmp_path}/h.sqlite")
    with pytest.raises(ClosedError) as caught:
        await history.message_created(message(0, "hello"))
    assert isinstance(caught.value, HistoryError) and not isinstance(caught.value, StoreError)
