"""The viewer shows a line's generations where it opens it (docs/generations.md)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

pytest.importorskip("starlette", reason="the viewer needs the serve extra")

from starlette.testclient import TestClient

from history import History, HistorySettings
from history.viewer import create_app

from ..conftest import message
from ..faults.test_down import Broken
from ..processor.test_generations import Counting
from ..viewing import Page


def test_a_line_opened_lists_its_generations(tmp_path: Path) -> None:
    db = tmp_path / "down.sqlite"
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)

    async def build() -> None:
        async with History(settings, store=db, model=Broken(), pause=0.0) as history:
            for k, text in enumerate(["word " * 40, "ok", "fine", "later"]):
                await history.message_created(message(k, text))
                await history.wait()
        async with History(settings, store=db, pause=0.0) as history:
            await history.reconsolidate("t", summarizer=Counting(), fallbacks=True)

    anyio.run(build)
    with TestClient(create_app(str(db))) as client:
        opened = Page(client.get("/threads/t/open/0+2").text)
        plain = Page(client.get("/threads/t/open/2+1").text)
        page = Page(client.get("/threads/t?open=0%2B2").text)
    listed = [s.text for s in opened.find("span", "line")]
    assert listed[0].startswith("Ana → north: word word") and listed[0].endswith("…")
    assert listed[1] == "R1.0"
    assert [c.text for c in opened.find("code")][:2] == ["#0", "#1"]
    assert not plain.find("section", "generations")
    assert page.find("section", "generations")
    assert {"#0", "#1"} <= {c.text for c in page.find("code")}
