"""One rule for a thread's settings: a History or a worker that would process a thread recorded
with other settings refuses at once, naming the difference, unless told to adopt its own."""

from __future__ import annotations

import json

import pytest

from history import ConfigurationError, History, HistorySettings
from history._worker import serve

from ..conftest import message

pytestmark = pytest.mark.anyio

RECORDED = HistorySettings(summarizer="echo", tail=(150, 300), outline=(400, 800))
DEFAULTS = HistorySettings(summarizer="echo")


async def build(database: str) -> None:
    async with History(RECORDED, store=database) as history:
        for k in range(3):
            await history.message_created(message(k, f"point {k} of the plan"))


@pytest.mark.slow
async def test_a_history_with_other_settings_refuses_the_thread_at_once(database: str) -> None:
    await build(database)
    async with History(DEFAULTS, store=database, process=False) as storing:
        await storing.message_created(message(3, "a point stored meanwhile"))
    with pytest.raises(ConfigurationError, match=r"thread 't' was built with tail 150,300.*not "):
        async with History(DEFAULTS, store=database):
            pass
    async with History(RECORDED, store=database) as history:  # its own settings: nothing to say
        before = await history.outline("t")
        await history.wait()
        after = await history.outline("t")
    assert before is not None and before.position == 2  # the refused History processed nothing
    assert after is not None and after.position == 3


async def test_a_history_told_to_adopt_its_settings_records_them_and_goes_on(
    database: str,
) -> None:
    await build(database)
    async with History(DEFAULTS, store=database, adopt_settings=True) as history:
        await history.message_created(message(3, "a point after the change"))
        await history.wait()
        [about] = await history.store.about("t")
        outline = await history.outline("t")
    assert about.settings is not None
    assert json.loads(about.settings)["tail"] == list(DEFAULTS.tail)
    assert outline is not None and outline.position == 3
    async with History(DEFAULTS, store=database):  # recorded anew: no longer refused
        pass


async def test_a_worker_with_other_settings_stops_at_once(database: str) -> None:
    await build(database)
    async with History(DEFAULTS, store=database, process=False) as storing:
        await storing.message_created(message(3, "a point for the worker"))
    worker = History(DEFAULTS, store=database, process=False)
    with pytest.raises(ConfigurationError, match="adopt_settings=True"):
        await serve(worker, poll=0.05)
