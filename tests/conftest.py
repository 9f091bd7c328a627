"""The history tests' runtime: asyncio (aiosqlite runs on it only), small budgets, helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol, TypedDict, Unpack

import pytest
from pydantic_ai.messages import CachePoint, ModelMessage, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from history import File, History, HistorySettings, Message, Summarizer
from history.cli import main
from history.contract import Ask
from history.store import Store, open_store

from .stores import KINDS, store_url

START = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class MessageExtras(TypedDict, total=False):
    """The fields of a Message that `message` leaves to their defaults unless given."""

    files: tuple[File, ...]


def message(
    n: int,
    text: str,
    *,
    thread: str = "t",
    author: str = "Ana",
    to: str = "north",
    step: bool = False,
    **extra: Unpack[MessageExtras],
) -> Message:
    """Message `n` of a thread, one minute after the one before."""
    return Message(
        id=f"{thread}-{n}",
        thread=thread,
        author=author,
        to=to,
        text=text,
        at=START + timedelta(minutes=n),
        step=step,
        **extra,
    )


def kinds(request: ModelMessage) -> list[str]:
    """What each part of a view's request is: its part kind, `mark` for a cache point."""
    return [
        "mark" if isinstance(p, UserPromptPart) and p.content == [CachePoint()] else p.part_kind
        for p in request.parts
    ]


def exchange(texts: Iterable[str], *, thread: str = "t", start: int = 0) -> list[Message]:
    """Ana says each text to north, and north answers `ok`."""
    out: list[Message] = []
    for k, text in enumerate(texts):
        n = start + 2 * k
        out.append(message(n, text, thread=thread))
        out.append(message(n + 1, "ok", thread=thread, author="north", to="Ana"))
    return out


class Run:
    """An open History with the asks it made, for tests."""

    def __init__(self, history: History, asks: list[Ask]) -> None:
        self.history = history
        self.asks = asks

    async def send(self, *messages: Message) -> None:
        for m in messages:
            await self.history.message_created(m)
        await self.history.wait()


class Options(TypedDict, total=False):
    """HistorySettings' fields but the summarizer, as keyword arguments, each optional."""

    line: int
    tail: tuple[int, int]
    outline: tuple[int, int]
    kept: int
    tries: int
    cut_gap: bool
    cold: float | None
    steps: tuple[int, int] | None
    encoding: str
    model_settings: ModelSettings | None
    search_language: str


class Settings(Options, total=False):
    """HistorySettings' fields as keyword arguments, each optional (the summarizer too)."""

    summarizer: str


class PluginOptions(TypedDict, total=False):
    """History's own keyword arguments, those a test may change."""

    concurrency: int
    timeout: float
    pause: float
    max_pause: float
    process: bool


class Opener(Protocol):
    """The `open_history` fixture: a fresh History on its own store, as a context manager."""

    def __call__(
        self,
        *,
        store: str | Path | Store | None = None,
        model: Model | Summarizer | None = None,
        plugin: PluginOptions | None = None,
        **settings: Unpack[Settings],
    ) -> AbstractAsyncContextManager[Run]: ...


@pytest.fixture
def open_history(tmp_path: Path) -> Opener:
    """`async with open_history(summarizer="scripted", tail=(25, 50)) as run:` a fresh store."""

    @asynccontextmanager
    async def opener(
        *,
        store: str | Path | Store | None = None,
        model: Model | Summarizer | None = None,
        plugin: PluginOptions | None = None,
        **settings: Unpack[Settings],
    ) -> AsyncIterator[Run]:
        settings.setdefault("summarizer", "scripted")
        asks: list[Ask] = []
        options: PluginOptions = {"pause": 0.0, **(plugin or {})}
        history = History(
            HistorySettings(**settings),
            store=store or tmp_path / "history.sqlite",
            model=model,
            on_ask=asks.append,
            **options,
        )
        async with history:
            yield Run(history, asks)

    return opener


@pytest.fixture(params=KINDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of each kind: what runs on one store runs on every store."""
    with store_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
async def store(database: str, anyio_backend: str) -> AsyncIterator[Store]:
    """An open store on a fresh database of each kind."""
    opened = open_store(database)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """Run the command line in this process: its exit status, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
