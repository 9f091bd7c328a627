"""A History that only stores (`process=False`, a web server's) needs no summarizer key; the one
that processes (a worker, `catch_up`) is refused at once without it, with the offline fix named."""

from __future__ import annotations

from pathlib import Path

import pytest

from history import ConfigurationError, History, HistorySettings
from history._worker import serve

from ..conftest import message

pytestmark = pytest.mark.anyio

SETTINGS = HistorySettings(summarizer="openai:gpt-4.1-nano")


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


async def test_a_history_that_only_stores_needs_no_key(tmp_path: Path) -> None:
    async with History(SETTINGS, store=tmp_path / "h.sqlite", process=False) as chat:
        await chat.message_created(message(0, "Price it at 49 euros."))
        outline = await chat.outline("t")
        with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
            await chat.catch_up()  # processing needs the model: refused before any thread
    assert outline is not None and outline.tail_start == 0
    assert chat.summarizer.name == "openai:gpt-4.1-nano"


async def test_a_worker_without_its_key_stops_before_it_opens(tmp_path: Path) -> None:
    chat = History(SETTINGS, store=tmp_path / "h.sqlite", process=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        await serve(chat, poll=0.01)


def test_the_missing_key_error_names_the_offline_summarizer() -> None:
    with pytest.raises(ConfigurationError) as refused:
        History(SETTINGS, store=":memory:")
    assert 'summarizer="echo"' in str(refused.value)
    assert "Agent('test')" not in str(refused.value)
