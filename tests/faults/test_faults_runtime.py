"""Faults at the edges of the runtime: a bad answer, a dead model, a dropped database.

Each test drives one fault through the public API (History, the summarizer protocol, the
command line) and checks what a user would notice: the plugin goes on, nothing is half-written,
`wait()` returns, and the logs carry no secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from history import (
    Ask,
    Echo,
    History,
    HistorySettings,
    InputError,
    Message,
    Replay,
    Reply,
    Scripted,
    StoreError,
    StoreGoneError,
    Summarizer,
    Task,
    prompt_text,
    view,
)
from history._worker import serve
from history.cli import main
from history.rebuilding import rebuild
from history.store import Store, open_store
from history.store._records import ThreadRecords

from ..chats import trace
from ..conftest import Options, message
from ..stores import postgres_server, postgres_sql
from ..workers import ready, worker

if TYPE_CHECKING:
    from asyncpg import Record

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SMALL: Options = {"line": 96, "tail": (1, 2), "kept": 1}
"""Every message but the newest leaves the tail, and each of `chat`'s is longer than a line:
each one is asked for a line, and every merge too."""


@asynccontextmanager
async def opened(where: str | Path) -> AsyncIterator[Store]:
    store = open_store(where)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def chat(count: int, *, thread: str = "t") -> list[Message]:
    texts = (f"message {k}: " + "words " * (k % 5 + 20) for k in range(count))
    return [message(k, text, thread=thread) for k, text in enumerate(texts)]


class Answering:
    """Answers every request with `reply` (anything: the protocol's types are not enforced)."""

    def __init__(self, reply: object, *, name: str = "scripted") -> None:
        self.name = name
        self.reply_value = reply
        self.requests = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.requests += 1
        return self.reply_value  # type: ignore[return-value]


class Failing:
    """Raises `error` on every request."""

    def __init__(self, error: BaseException, *, name: str = "dead") -> None:
        self.name = name
        self.error = error
        self.requests = 0

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.requests += 1
        raise self.error


def json_escape_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A provider whose JSON answer held the escape `"\\ud800"`: a lone surrogate."""
    return ModelResponse(parts=[TextPart(content=json.loads('"a line \\ud800 cut"'))])


# 1. Anything a model returns is untrusted: a bad answer is a failed try, never a crash.

BAD_ANSWERS: dict[str, Callable[[], Model | Summarizer]] = {
    "lone surrogate (JSON escape)": lambda: FunctionModel(json_escape_answer),
    "text None": lambda: Answering(Reply(text=None)),  # type: ignore[arg-type]
    "not a Reply": lambda: Answering("just a string"),
    "tokens None": lambda: Answering(Reply(text="ok", input_tokens=None)),  # type: ignore[arg-type]
    "NUL": lambda: Answering(Reply(text="a line\x00with NUL")),
}


@pytest.mark.parametrize("bad", BAD_ANSWERS, ids=list(BAD_ANSWERS))
async def test_a_bad_answer_is_a_failed_try_and_the_line_falls_back(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "h.sqlite"
    settings = HistorySettings(summarizer="scripted", **SMALL)
    # Stored first, processed on opening: the reopen of a store with work left.
    async with History(settings, store=path, process=False) as storing:
        for m in chat(3):
            await storing.message_created(m)
    history = History(settings, store=path, model=BAD_ANSWERS[bad](), pause=0.0)
    with anyio.fail_after(30):
        async with history:
            await history.message_created(message(3, "one more"))
            await history.wait()
            outline = await history.outline("t")
            lines = await history.store.summaries("t")
    assert outline is not None and outline.position == 3
    assert history.counters.fallbacks == len(lines) > 0
    # The first line is asked 5 times; the breaker is open then, and the others fall back
    # at once (a probe now and then at most: SPEC section 5, version 3).
    assert 5 <= history.counters.failures < 5 + len(lines)
    assert all(line.text.endswith("…") and "\x00" not in line.text for line in lines)


async def test_an_on_ask_listener_that_raises_is_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def listener(ask: Ask) -> None:
        raise ValueError(f"the app's bug, holding {ask.line!r}")

    settings = HistorySettings(summarizer="scripted", **SMALL)
    history = History(settings, store=tmp_path / "h.sqlite", on_ask=listener, pause=0.0)
    with anyio.fail_after(30):
        async with history:
            for m in chat(6) + chat(6, thread="u"):
                await history.message_created(m)
            await history.wait()
            outlines = [await history.outline(thread) for thread in ("t", "u")]
    # Both threads went on past every raise, and the block ended cleanly.
    assert [o.position if o else None for o in outlines] == [5, 5]
    assert history.counters.listener_errors == history.counters.asks > 0
    failed = [r for r in caplog.records if "listener" in r.getMessage()]
    assert len(failed) == history.counters.asks
    assert all("ValueError" in r.getMessage() and "S0" not in r.getMessage() for r in failed)


# 2. A model that always fails: each line costs the same bounded time, however many came before.


async def test_an_always_failing_model_costs_each_line_the_same_bounded_time(
    tmp_path: Path,
) -> None:
    dead = Failing(RuntimeError("401"), name="scripted")
    settings = HistorySettings(summarizer="scripted", **SMALL)
    # Pauses of 2, 4, 8 and 16 ms per line; the default max_pause (60 s) must never be reached.
    history = History(settings, store=tmp_path / "h.sqlite", model=dead, pause=0.002)
    started = anyio.current_time()
    with anyio.fail_after(60):
        async with history:
            for m in chat(40):
                await history.message_created(m)
            await history.wait()
            outline = await history.outline("t")
    elapsed = anyio.current_time() - started
    assert outline is not None and outline.position == 39
    lines = history.counters.fallbacks
    # 5 requests for the first line; then the breaker is open (a probe now and then).
    assert lines >= 39 and 5 <= dead.requests < 5 + lines
    assert elapsed < 30, f"{lines} lines that fell back took {elapsed:.1f}s"


class DeadFor:
    """Fails every request of one thread; answers the others like `scripted`."""

    name = "scripted"

    def __init__(self, thread: str) -> None:
        self.thread = thread

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if task.thread == self.thread:
            raise RuntimeError("down for this thread")
        return await Scripted().reply(task, prompts, answers)


async def test_a_thread_waiting_out_its_pause_holds_no_other(tmp_path: Path) -> None:
    settings = HistorySettings(summarizer="scripted", **SMALL)
    last = anyio.Event()  # the line of b's message 4, committed with its message 5

    def listener(ask: Ask) -> None:
        if (ask.thread, ask.level, ask.index) == ("b", 0, 4):
            last.set()

    history = History(settings, store=tmp_path / "h.sqlite", model=DeadFor("a"), pause=30.0)
    history.subscribe(listener)
    with anyio.fail_after(30), anyio.CancelScope() as everything:
        async with history:
            for m in chat(6, thread="a") + chat(6, thread="b"):
                await history.message_created(m)
            await last.wait()
            a, b = await history.outline("a"), await history.outline("b")
            everything.cancel()  # thread a would wait out its pauses
    assert b is not None and b.position == 5 and b.boundary == 5
    assert a is not None and a.position < 5 and history.counters.failures >= 1


# 3. NUL: refused in a message on every store; an answer holding one is a failed try.


@pytest.mark.parametrize("field", ["text", "author", "to", "id", "thread"])
def test_a_message_with_nul_is_refused_naming_the_field(field: str) -> None:
    values = {"id": "m", "thread": "t", "author": "Ana", "to": "", "text": "hello"}
    values[field] = "a\x00b"
    with pytest.raises(InputError, match="NUL") as refused:
        Message.from_json({**values, "at": "2026-11-01T09:00:00+00:00"})
    assert refused.value.field == field
    with pytest.raises(InputError, match="NUL"):
        message(0, "a\x00b")


async def test_a_nul_answer_never_blocks_a_store_and_wait_returns(database: str) -> None:
    model = Answering(Reply(text="line\x00"))
    settings = HistorySettings(summarizer="scripted", **SMALL)
    history = History(settings, store=database, model=model, pause=0.0)
    with anyio.fail_after(30):
        async with history:
            for m in chat(4):
                await history.message_created(m)
            await history.wait()
            outline = await history.outline("t")
    assert outline is not None and outline.position == 3
    fallbacks = history.counters.fallbacks  # the first asked 5 times, the others while open
    assert fallbacks > 0 and 5 <= model.requests < 5 + fallbacks


async def test_a_nul_an_older_sqlite_store_holds_reads_and_loads_into_every_store(
    tmp_path: Path, store: Store
) -> None:
    path = tmp_path / "old.sqlite"
    async with History(HistorySettings(summarizer="echo"), store=path) as history:
        await history.message_created(message(0, "before NUL was refused"))
    with closing(sqlite3.connect(path)) as db, db:  # what an older version let in
        db.execute("UPDATE message SET text = ?, author = ?", ("a\x00b", "A\x00na"))
    async with opened(path) as old:
        records = await old.export_thread("t")
    assert records is not None
    (stored,) = records.messages
    assert (stored.message.text, stored.message.author) == ("a\ufffdb", "A\ufffdna")
    await store.load_records([records])
    again = await store.export_thread("t")
    assert again is not None and again.messages == records.messages


# 8. A PostgreSQL database dropped under a running plugin and its workers.


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    """A PostgreSQL database of its own (dropped with FORCE afterwards, if still there)."""
    server = postgres_server()
    name = f"faults_{uuid.uuid4().hex[:12]}"
    await sql(server, f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        await sql(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def sql(url: str, statement: str) -> list[Record]:
    return await anyio.to_thread.run_sync(postgres_sql, url, statement)


async def drop(url: str) -> None:
    await sql(postgres_server(), f"DROP DATABASE {urlsplit(url).path[1:]} WITH (FORCE)")


class Held:
    """Answers like `echo`, each request once `released` is set."""

    name = "echo"

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.released = anyio.Event()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        self.asked.set()
        await self.released.wait()
        return await Echo().reply(task, prompts, answers)


async def test_a_dropped_database_is_a_store_error_and_the_threads_stop_retrying() -> None:
    async with fresh_database() as url:
        model = Held()
        settings = HistorySettings(summarizer="echo", **SMALL)
        history = History(settings, store=url, model=model, pause=0.01, max_pause=0.05)
        with anyio.fail_after(60):
            async with history:
                for m in chat(3):
                    await history.message_created(m)
                await model.asked.wait()  # a batch is in flight
                await drop(url)
                model.released.set()
                for n in range(3, 50):  # a connection cut by the drop may fail first
                    with pytest.raises(StoreError) as raised:
                        await history.message_created(message(n, "after the drop"))
                    if isinstance(raised.value, StoreGoneError):
                        break
                assert "was its database or schema dropped?" in str(raised.value)
                assert "\n" not in str(raised.value)
                await history.wait()  # the threads stopped: nothing to retry until a restore


async def test_a_database_dropped_under_concurrent_writers_raises_only_store_errors() -> None:
    raised: list[BaseException] = []
    async with fresh_database() as url:
        settings = HistorySettings(summarizer="echo", **SMALL)
        history = History(settings, store=url, pause=0.01, max_pause=0.05)
        with anyio.fail_after(60):
            async with history:

                async def writer(k: int) -> None:
                    failed = 0
                    for n in range(500):
                        try:
                            await history.message_created(message(n, "words " * 9, thread=f"w{k}"))
                        except Exception as exc:  # every kind: what is checked
                            raised.append(exc)
                            failed += 1
                            if failed == 10:
                                return
                        await anyio.sleep(0.002)

                async with anyio.create_task_group() as group:
                    for k in range(6):
                        group.start_soon(writer, k)
                    await anyio.sleep(0.2)
                    await drop(url)
                await history.wait()
    assert raised, "the drop came after the writers finished"
    assert all(isinstance(exc, StoreError) for exc in raised), {type(e) for e in raised}


async def test_a_worker_exits_with_a_clear_error_when_its_database_is_dropped() -> None:
    async with fresh_database() as url:
        settings = HistorySettings(summarizer="echo", **SMALL)
        async with History(settings, store=url, process=False) as web:
            for m in chat(3):
                await web.message_created(m)
        worker = History(settings, store=url, process=False, pause=0.01, max_pause=0.05)
        asked = anyio.Event()
        worker.subscribe(lambda ask: asked.set())
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:

                async def dropping() -> None:
                    await asked.wait()
                    await drop(url)

                group.start_soon(dropping)
                with pytest.raises(StoreGoneError, match="dropped"):
                    await serve(worker, poll=0.01)
        assert worker.counters.processed > 0


def test_the_worker_command_exits_with_one_line_when_its_database_is_dropped(
    tmp_path: Path,
) -> None:
    server = postgres_server()
    name = f"faults_{uuid.uuid4().hex[:12]}"
    postgres_sql(server, f"CREATE DATABASE {name}")
    log = tmp_path / "worker.log"
    try:
        process = worker(urlunsplit(urlsplit(server)._replace(path=f"/{name}")), log)
        try:
            ready(process, log)
            postgres_sql(server, f"DROP DATABASE {name} WITH (FORCE)")
            process.communicate(timeout=60)
        finally:
            process.kill()
    finally:
        postgres_sql(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    assert process.returncode == 2
    last = log.read_text().splitlines()[-1]
    assert last.startswith("chat-outline: the PostgreSQL store") and "is gone" in last


async def test_the_plugin_recovers_when_its_connections_were_cut() -> None:
    server = postgres_server()
    app = f"faults_{uuid.uuid4().hex[:12]}"
    async with fresh_database() as base:
        url = f"{base}?application_name={app}"
        settings = HistorySettings(summarizer="echo", **SMALL)
        history = History(settings, store=url, pause=0.01, max_pause=0.05)
        with anyio.fail_after(60):
            async with history:
                for m in chat(3):
                    await history.message_created(m)
                await history.wait()
                cut = await sql(
                    server,
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE application_name = '{app}'",
                )
                assert cut
                for m in chat(8)[3:]:
                    for _ in range(50):  # the first use of a cut connection may fail
                        try:
                            await history.message_created(m)
                            break
                        except StoreError:
                            await anyio.sleep(0.01)
                await history.wait()
                outline = await history.outline("t")
    assert outline is not None and outline.position == 7


# 9. A summarizer raising CancelledError is a failed try, not the end of the app's block.


class CancelledFirst:
    """Raises `asyncio.CancelledError` on the first request of each line, then answers."""

    name = "scripted"

    def __init__(self) -> None:
        self.seen: set[tuple[str, ...]] = set()

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        if tuple(prompts) not in self.seen:
            self.seen.add(tuple(prompts))
            raise asyncio.CancelledError
        return await Scripted().reply(task, prompts, answers)


async def test_a_summarizer_raising_cancelled_does_not_end_the_apps_block(
    tmp_path: Path,
) -> None:
    settings = HistorySettings(summarizer="scripted", **SMALL)
    history = History(settings, store=tmp_path / "h.sqlite", model=CancelledFirst(), pause=0.0)
    handed = 0
    with anyio.fail_after(60):
        async with history:
            for m in chat(120):
                await history.message_created(m)
                handed += 1
            await history.wait()
            outline = await history.outline("t")
    assert handed == 120
    assert outline is not None and outline.position == 119
    assert history.counters.failures == history.counters.asks > 100
    assert history.counters.fallbacks == 0  # each line failed once, then was answered


async def test_a_real_cancellation_still_cancels(tmp_path: Path) -> None:
    settings = HistorySettings(summarizer="scripted", **SMALL)
    model = Held()
    with anyio.move_on_after(0.5) as scope:
        async with History(settings, store=tmp_path / "h.sqlite", model=model) as history:
            for m in chat(3):
                await history.message_created(m)
            await history.wait()  # held by the model until the app cancels
    assert scope.cancelled_caught
    assert history.counters.processed < 3 and history.counters.failures == 0


# 12. Logs carry no secret: a provider's 401 body that echoes the API key is never logged.

KEY = "sk-test-0123456789abcdefSECRET"


def echoing_401(request: httpx2.Request) -> httpx2.Response:
    error = {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}
    return httpx2.Response(401, json={"error": error})


async def test_a_401_body_echoing_the_api_key_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(echoing_401))
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(api_key=KEY, http_client=client))
    settings = HistorySettings(summarizer="scripted", **SMALL)
    history = History(settings, store=tmp_path / "h.sqlite", model=model, pause=0.0)
    with anyio.fail_after(60):
        async with history:
            for m in chat(3):
                await history.message_created(m)
            await history.wait()
    assert history.counters.fallbacks > 0
    logged = "\n".join(caplog.text.splitlines() + [r.getMessage() for r in caplog.records])
    assert "status 401" in logged
    assert KEY not in logged and "SECRET" not in logged
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("history"))
    assert "words words" not in ours  # nor the messages' text


async def test_a_native_form_that_cannot_be_read_is_logged_without_its_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = HistorySettings(summarizer="echo")
    unreadable = '[{"kind": "response", "parts": "the secret plan"}]'
    async with History(settings, store=tmp_path / "h.sqlite") as history:
        said = message(0, "the secret plan", author="north", to="Ana")
        await history.message_created(said, native=unreadable)
        sent = await view(history, "t", agent="north")
    assert prompt_text(sent) == "[assistant]\nthe secret plan\n"  # the text, not the native
    (warning,) = [r for r in caplog.records if r.name.startswith("history")]
    assert "cannot be read (ValidationError)" in warning.getMessage()
    assert "secret" not in warning.getMessage()


# 13. A line that fell back is recorded as a fallback, and asked again when calls are allowed.


async def test_a_rebuild_with_model_calls_asks_the_fallbacks_again(
    tmp_path: Path, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = HistorySettings(summarizer="echo", **SMALL)
    down = database
    dead = Failing(RuntimeError(), name="echo")
    async with History(settings, store=down, model=dead, pause=0.0) as history:
        for m in chat(6):
            await history.message_created(m)
    async with opened(down) as store:
        calls = await store.calls("t")
    assert [c.outcome for c in calls] == ["fallback"] * history.counters.fallbacks != []

    # What the model, had it answered from the start, was asked.
    working = tmp_path / "working.sqlite"
    asks: list[Ask] = []
    async with History(settings, store=working, on_ask=asks.append) as history:
        for m in chat(6):
            await history.message_created(m)
    requests = sum(len(a.prompts) for a in asks)

    async def command(*argv: str) -> str:
        budgets = ["--db", str(down), "--line", "96", "--tail", "1,2", "--kept", "1"]
        assert await anyio.to_thread.run_sync(main, ["rebuild", "t", *argv, *budgets]) == 0
        return capsys.readouterr().out

    assert f"would make {requests} model calls" in await command("--dry-run")
    assert "made 0 model calls" in await command()  # calls not allowed: the same cuts replayed
    async with opened(down) as store:
        assert [c.outcome for c in await store.calls("t")] == ["fallback"] * len(calls)
    assert f"made {requests} model calls" in await command("--allow-model-calls")

    async with opened(down) as store, opened(working) as expected:
        assert await trace(store) == await trace(expected)
        # Every line is answered now: a rebuild without model calls replays the answers.
        again = await rebuild(store, "t", settings)
        assert await trace(store) == await trace(expected)
    assert again.model_calls == 0


async def test_a_replay_with_calls_allowed_asks_a_fallback_again(
    tmp_path: Path, database: str
) -> None:
    settings = HistorySettings(summarizer="scripted", **SMALL)
    down = tmp_path / "down.sqlite"
    dead = Failing(RuntimeError(), name="scripted")
    async with History(settings, store=down, model=dead, pause=0.0) as history:
        for m in chat(4):
            await history.message_created(m)
    async with opened(down) as store:
        original = await store.export_thread("t")
    assert original is not None and original.calls

    # The messages and the calls, carried to a fresh store: processed there, replaying.
    again = database
    async with opened(again) as store:
        await store.load_records(
            [ThreadRecords(thread="t", messages=original.messages, calls=original.calls)]
        )
    scripted = Answering(Reply(text="answered"), name="scripted")
    replay = Replay(scripted, [c.ask for c in original.calls])
    async with History(settings, store=again, model=replay):
        pass  # opening catches up
    assert scripted.requests == replay.misses > 0
    async with opened(again) as store:
        calls = await store.calls("t")
        lines = await store.summaries("t")
    assert {line.text for line in lines} == {"answered"} | {"answered\nanswered"}
    # The first line's request is the recorded one: its answer replaced the fallback.
    first = [(c.prompts, c.outcome) for c in calls if (c.level, c.index) == (0, 0)]
    assert first == [(original.calls[0].ask.prompts, "fit")]
