"""A summarizer that is down: its lines fall back, marked as fallbacks, on every store."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from history import Health, History, HistorySettings, Scripted, breaker, prompt_text, view
from history.carry import export, load
from history.contract import Reply, Task
from history.lines import render
from history.processors.weight import encoding
from history.store import open_store

from ..conftest import message

pytestmark = pytest.mark.anyio


class Broken:
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        raise RuntimeError("always down")


@pytest.mark.slow
async def test_fallback_lines_are_marked_and_carried_by_export_and_load(
    database: str,
) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    long = "word " * 40
    async with History(settings, store=database, model=Broken(), pause=0.0) as history:
        for k, text in enumerate([long, "ok", "fine", "later"]):
            await history.message_created(message(k, text))
            await history.wait()
        nodes = {(n.level, n.index): n.fallback for n in await history.store.summaries()}
        out = io.StringIO()
        await export(history.store, out)
    # Message 0's line fell back; message 1's and 2's are their own text; the merge of 0 and 1
    # is too long to join and falls back too.
    assert nodes == {(0, 0): True, (0, 1): False, (1, 0): True, (0, 2): False}
    assert '"fallback":true' in out.getvalue().replace(" ", "")
    store = open_store(database)
    await store.open()
    try:
        assert await store.erase("t")
        await load(store, out.getvalue().splitlines())
        loaded = {(n.level, n.index): n.fallback for n in await store.summaries()}
    finally:
        await store.close()
    assert loaded == nodes


class Refusing:
    """A provider that refuses the key: HTTP 401 on every request."""

    name = "refusing"

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        from pydantic_ai.exceptions import ModelHTTPError

        self.calls += 1
        raise ModelHTTPError(status_code=401, model_name="gpt-test", body={"key": "sk-secret"})


def test_failures_that_waiting_will_not_mend_are_told_apart() -> None:
    from pydantic_ai.exceptions import (
        ModelAuthenticationError,
        ModelHTTPError,
        ModelRateLimitError,
        UserError,
    )

    from history.errors import ConfigurationError
    from history.summarizer import permanent

    for status in (400, 401, 403, 404, 422):
        assert permanent(ModelHTTPError(status_code=status, model_name="m"))
    for status in (408, 429, 500, 502, 503, 529):
        assert not permanent(ModelHTTPError(status_code=status, model_name="m"))
    assert permanent(UserError("Set the `OPENAI_API_KEY` environment variable"))
    assert permanent(ModelAuthenticationError(model_name="m", message="no"))
    assert permanent(ConfigurationError("summarizer 'x' needs its provider's package"))
    assert not permanent(ModelRateLimitError(model_name="m", message="slow"))
    for transient in (TimeoutError(), ConnectionError(), RuntimeError("401"), OSError()):
        assert not permanent(transient)


async def test_a_refused_key_stops_asking_at_once_and_its_lines_fall_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    refusing = Refusing()
    started = anyio.current_time()
    async with History(settings, store=tmp_path / "h.sqlite", model=refusing) as history:
        for k in range(30):
            await history.message_created(message(k, f"message {k} " + "word " * 30))
        await history.wait()
        health = history.health()
        outline = await history.outline("t")
    # One request, no backoff (the default pause would take 15 s for 5 tries): the breaker
    # opened at once, and every line after it fell back unasked.
    assert anyio.current_time() - started < 5
    assert refusing.calls == 1 and history.counters.failures == 1
    assert outline is not None and outline.position == 29
    assert health.state == "open" and health.permanent and health.failures == 1
    assert health.last_error == "ModelHTTPError (status 401)"
    assert health.fallbacks == history.counters.fallbacks > 20
    assert health.since is not None
    opened = [r for r in caplog.records if "breaker open" in r.getMessage()]
    assert len(opened) == 1 and opened[0].levelname == "WARNING"
    assert "sk-secret" not in caplog.text and "word" not in caplog.text


class Flaky:
    """Down until `up` is set; then answers like `scripted`. Counts the requests in flight."""

    name = "scripted"

    def __init__(self) -> None:
        self.up = False
        self.calls = 0
        self.flying = 0
        self.most = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.calls += 1
        self.flying += 1
        self.most = max(self.most, self.flying)
        try:
            await anyio.sleep(0.01)
            if not self.up:
                raise ConnectionError("down")
            return await Scripted().reply(task, prompts, answers)
        finally:
            self.flying -= 1


@pytest.mark.slow
async def test_the_breaker_opens_after_a_run_of_failures_probes_one_at_a_time_and_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(breaker, "FIRST_COOL_DOWN", 0.05)
    probes: list[bool] = []  # one for each probe let through while it was open
    admit = breaker.Breaker.admit

    def counted(self: breaker.Breaker) -> bool:
        was_down = self.down
        granted = admit(self)
        if granted and was_down:
            probes.append(True)
        return granted

    monkeypatch.setattr(breaker.Breaker, "admit", counted)
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    flaky = Flaky()
    async with History(
        settings, store=tmp_path / "h.sqlite", model=flaky, pause=0.01, max_failures=3
    ) as history:
        assert history.health() == Health(
            state="closed",
            failures=0,
            since=None,
            last_error=None,
            permanent=False,
            fallbacks=0,
        )
        for thread in "abcdefgh":
            for k in range(4):
                await history.message_created(message(k, f"{thread} {k} " * 20, thread=thread))
        await history.wait()
        down = history.health()
        calls_while_down, probed = flaky.calls, len(probes)
        # More threads while it is down: their lines fall back, with one probe at a time.
        for thread in "ijkl":
            for k in range(4):
                await history.message_created(message(k, f"{thread} {k} " * 20, thread=thread))
            await anyio.sleep(0.06)
        await history.wait()
        flaky.up = True
        await anyio.sleep(0.2)  # past the cool-down (doubled by each failed probe, at most)
        for k in range(4, 8):
            await history.message_created(message(k, f"a {k} " * 20, thread="a"))
        with anyio.fail_after(10):
            while history.health().state != "closed":
                await history.message_created(message(k := k + 1, f"a {k} " * 20, thread="a"))
                await history.wait()
                await anyio.sleep(0.1)
        up = history.health()
    assert down.state == "open" and not down.permanent
    assert down.last_error == "ConnectionError" and down.failures >= 3
    # Not 5 per line: 3 failures in a row opened it, with the 8 threads' first asks in flight;
    # past those, only probes (as many as the machine's pace let cool-downs pass meanwhile).
    assert calls_while_down - probed <= 8
    # Probes only, while down; the threads' own requests (their fallback lines are asked again
    # once it answers, by re-summaries of their own: `history._again`).
    assert history.counters.requests - calls_while_down < 12
    assert flaky.calls > history.counters.requests
    assert up.state == "closed" and up.failures == 0 and up.fallbacks >= down.fallbacks > 0
    assert up.since is not None and down.since is not None and up.since > down.since
    opened = [r for r in caplog.records if "breaker open" in r.getMessage()]
    closed = [r for r in caplog.records if "breaker closed" in r.getMessage()]
    assert len(opened) == 1 and len(closed) == 1
    assert {r.levelname for r in opened + closed} == {"WARNING"}


def tokens(text: str) -> int:
    return len(encoding("cl100k_base").encode_ordinary(text))


@pytest.mark.slow
@pytest.mark.parametrize("failing", [Broken, Refusing])
async def test_a_summarizer_that_always_fails_keeps_the_prompt_within_its_budget(
    tmp_path: Path, failing: type[Broken | Refusing]
) -> None:
    """The tail is cut on time: the lines a cut needs fall back at once once it is down, so
    the prompt never holds more than tail[1], the newest message and the outline's bound."""
    settings = HistorySettings(
        summarizer="scripted", tail=(100, 200), outline=(300, 600), kept=1, line=64
    )
    peak = 0
    async with History(settings, store=tmp_path / "h.sqlite", model=failing(), pause=0.05) as h:
        for k in range(200):
            m = message(k, f"message {k}: " + " ".join(f"w{k}x{j}" for j in range(8)))
            await h.message_created(m)
            with anyio.move_on_after(0.2):  # an app does not wait for the summarizer
                await h.wait()
            sent = prompt_text(await view(h, "t", agent="north"))
            peak = max(peak, tokens(sent) - tokens(render(m)))
        assert h.health().state == "open"
    assert peak <= settings.tail[1] + settings.outline[1]


async def test_threads_shows_the_lines_that_fell_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from history.cli import main

    db = tmp_path / "h.sqlite"
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    async with History(settings, store=db, model=Refusing()) as history:
        for k, text in enumerate(["word " * 40, "ok", "fine", "later"]):
            await history.message_created(message(k, text))
        await history.wait()
    capsys.readouterr()
    assert await anyio.to_thread.run_sync(main, ["threads", "--db", str(db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["threads"]
    assert [(t["thread"], t["nodes"], t["fallbacks"]) for t in listed] == [("t", 4, 2)]
    assert await anyio.to_thread.run_sync(main, ["threads", "--db", str(db)]) == 0
    assert "4 (2 fallback)" in capsys.readouterr().out


async def test_when_down_stop_leaves_the_thread_pending_for_the_next_open(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    settings = HistorySettings(summarizer="scripted", tail=(1, 2), kept=1, line=64)
    texts = [f"message {k} " + "word " * 30 for k in range(12)]
    refusing = Refusing()
    async with History(settings, store=db, model=refusing, when_down="stop") as history:
        for k, text in enumerate(texts):
            await history.message_created(message(k, text))
        with anyio.fail_after(10):
            await history.wait()
        stopped = await history.outline("t")
        health = history.health()
    assert refusing.calls == 1 and history.counters.fallbacks == 0
    assert health.state == "open" and health.permanent
    assert stopped is not None and stopped.position < 11
    async with History(settings, store=db) as history:  # the summarizer answers again
        await history.wait()
        caught_up = await history.outline("t")
        nodes = await history.store.summaries("t")
    assert caught_up is not None and caught_up.position == 11
    assert nodes and not any(n.fallback for n in nodes)


@pytest.mark.parametrize(
    ("option", "bad"),
    [("max_failures", 0), ("max_failures", 2.5), ("max_failures", True), ("when_down", "wait")],
)
def test_the_breaker_options_are_checked(option: str, bad: object) -> None:
    from history.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=f"{option} must be .*{bad!r}"):
        History(HistorySettings(summarizer="echo"), store=":memory:", **{option: bad})  # type: ignore[arg-type]
