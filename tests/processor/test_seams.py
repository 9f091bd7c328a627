"""The seams between the plugin and the app (issue 31): a summarizer's own key and the
instructions in every recorded call's key, and a summarizer that cannot be awaited refused."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import (
    Echo,
    History,
    HistorySettings,
    Replay,
    Reply,
    Task,
    ThreadHistory,
    UnpinnedError,
)
from history.contract import File, Message
from history.errors import ConfigurationError, InputError
from history.rebuilding import rebuild
from history.settings import INSTRUCTIONS
from history.store import open_store

from ..chats import SMALL, ingest, long_chat
from ..conftest import Opener, message

pytestmark = pytest.mark.anyio
SETTINGS = HistorySettings(summarizer="prompted", **SMALL)


class Prompted:
    """An app's own summarizer: its prompt is its key."""

    name = "prompted"

    def __init__(self, prompt: str) -> None:
        self.key = self.prompt = prompt

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text=f"{self.prompt}: {task.index}")


async def rebuilt(path: Path, settings: HistorySettings, **options: object) -> int:
    """The model calls a rebuild of thread `t` made; UnpinnedError when it would need some."""
    store = open_store(path)
    await store.open()
    try:
        done = await rebuild(store, "t", settings, **options)  # type: ignore[arg-type]
    finally:
        await store.close()
    return done.model_calls


@pytest.mark.slow
async def test_a_custom_summarizers_key_is_in_every_recorded_calls_key(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    asks = await ingest(long_chat(120), SETTINGS, store=str(path), model=Prompted("v1"))
    assert asks
    assert await rebuilt(path, SETTINGS, model=Prompted("v1")) == 0  # replayed, asked nothing
    with pytest.raises(UnpinnedError, match="model calls"):
        await rebuilt(path, SETTINGS, model=Prompted("v2"))  # a changed prompt is a miss
    assert await rebuilt(path, SETTINGS, model=Prompted("v2"), allow_model_calls=True) > 0


@pytest.mark.slow
async def test_the_model_summarizer_takes_the_instructions_and_keys_its_calls_by_them(
    tmp_path: Path,
) -> None:
    told: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        told.append(info.instructions)
        return ModelResponse(parts=[TextPart("a line")])

    ours = "Summarize as a pirate would, one line a task."
    settings = HistorySettings(summarizer="function", instructions=ours, **SMALL)
    path = tmp_path / "h.sqlite"
    async with History(settings, store=path, model=FunctionModel(model)) as history:
        for m in long_chat(60):
            await history.message_created(m)
        await history.wait()
        (about,) = await history.store.about("t")
    assert told and set(told) == {ours}
    assert f'"instructions": "{ours}"' in (about.settings or "")  # recorded with its settings
    again = FunctionModel(model)
    assert await rebuilt(path, settings, model=again) == 0
    with pytest.raises(UnpinnedError, match="model calls"):
        await rebuilt(path, settings.with_changes(instructions=INSTRUCTIONS), model=again)


def test_the_default_instructions_are_the_specs_and_keep_the_key_of_old_stores() -> None:
    from history.pins import model_key

    history = History(HistorySettings(summarizer="echo"), store=":memory:")
    assert history.settings.instructions == INSTRUCTIONS
    assert history.model_key == f"echo\nNone\n{INSTRUCTIONS}"  # as before keys had a `key`
    assert model_key("echo", None, INSTRUCTIONS, "v1") == f"echo\nNone\n{INSTRUCTIONS}\nv1"


@pytest.mark.parametrize("text", ["", "   ", "a\0b", "\ud800", 7])
def test_instructions_that_cannot_be_sent_are_refused(text: object) -> None:
    with pytest.raises(ConfigurationError, match="instructions must be"):
        HistorySettings(summarizer="echo", instructions=text)  # type: ignore[arg-type]


class Blocking:
    name = "blocking"

    def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text="a line")


class Nameless:
    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        return Reply(text="a line")


class BadKey(Prompted):
    key = 3  # type: ignore[assignment]

    def __init__(self) -> None:
        pass


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (Blocking(), r"summarizer 'blocking' has no `async def reply`: write it as `async def"),
        (Nameless(), r"a summarizer needs a `name` \(a non-empty string\)"),
        (BadKey(), r"a summarizer's `key` must be a string, 'prompted' has 3"),
    ],
)
def test_a_summarizer_that_cannot_write_lines_is_refused_when_history_is_made(
    model: object, match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        History(SETTINGS, store=":memory:", model=model)  # type: ignore[arg-type]


@pytest.mark.parametrize("record_prompt", [True, False])
async def test_the_hook_records_an_answer_to_the_author_it_answers(
    open_history: Opener, record_prompt: bool
) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Noted.")])

    async with open_history(summarizer="echo") as run:
        if not record_prompt:  # the app hands Bea's message itself
            await run.send(message(0, "Hello?", author="Bea"))
        hook = ThreadHistory(
            run.history, "t", agent="north", user="Ana", record_prompt=record_prompt
        )
        await Agent(FunctionModel(model), capabilities=[hook]).run("Hello?")
        await run.history.wait()
        stored = await run.history.store.messages_after("t", 0, 10)
    answer = stored[-1].message
    assert (answer.author, answer.to, answer.text) == (
        "north",
        "Ana" if record_prompt else "Bea",
        "Noted.",
    )


async def test_refused_counts_threads_not_attempts(tmp_path: Path) -> None:
    settings = HistorySettings(summarizer="echo", line=64, tail=(10, 20), kept=1)
    replay = Replay(Echo(), [], refuse_misses=True)
    async with History(settings, store=tmp_path / "c.sqlite", model=replay, pause=0.01) as h:
        for n in range(4):  # each message tries the thread again, and is refused again
            await h.message_created(message(n, "long " * 40))
            await h.message_created(message(n, "long " * 40, thread="u"))
            with anyio.fail_after(5):
                await h.wait()
        assert replay.misses == 6  # three tries of each thread (its first message cuts nothing)
        assert h.counters.refused == 2


PDF = (
    b"%PDF-1.4\n"
    + b"".join(b"%d 0 obj << /Type /Page /Parent 1 0 R >> endobj\n" % k for k in range(3))
    + b"1 0 obj << /Type /Pages /Count 3 >> endobj\n%%EOF"
)


def test_a_pdf_weighs_by_its_pages_when_given_and_by_its_size_otherwise() -> None:
    from history.processors.weight import file_tokens, pdf_pages

    pdf: dict[str, object] = {"name": "d.pdf", "mime": "application/pdf", "size": 100_001}
    guessed, given = File.from_json(pdf), File.from_json({**pdf, "pages": 7})
    assert file_tokens(guessed) == 2 * 1_500  # pages guessed: one a 100,000 bytes
    assert (given.pages, file_tokens(given)) == (7, 7 * 1_500)
    assert file_tokens(File(name="x.pdf", mime="application/pdf", pages=3)) == 4_500  # size 0
    assert file_tokens(File(name="x", mime="text/plain", size=8, pages=7)) == 2  # not a PDF
    assert pdf_pages(PDF) == 3 and pdf_pages(b"%PDF-1.7 compressed") is None
    assert given.to_json() == {**pdf, "pages": 7}
    assert "pages" not in guessed.to_json()  # stored as before when not given


@pytest.mark.parametrize("pages", [-1, True, 2.5, "3"])
def test_pages_that_are_no_count_are_refused(pages: object) -> None:
    with pytest.raises(
        InputError, match=f"files.pages must be a whole number >= 0 or None, got {pages!r}"
    ):
        File(name="d.pdf", mime="application/pdf", pages=pages)  # type: ignore[arg-type]


async def test_importers_fill_a_pdfs_pages_where_their_source_says(tmp_path: Path) -> None:
    from pydantic_ai.messages import BinaryContent

    from history.agent.steps import prompt_content
    from history.ingest import read

    _, files = prompt_content(["read this", BinaryContent(PDF, media_type="application/pdf")])
    assert [f.pages for f in files] == [3]
    data = "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    part = {"type": "file", "file": {"file_data": data, "filename": "d.pdf"}}
    chat = json.dumps([{"role": "user", "content": ["read this", part]}]).encode()
    parsed = read(Path("chat.json"), format="chat", data=chat)
    (record,) = parsed.records
    assert isinstance(record.event, Message)
    assert [(f.name, f.pages) for f in record.event.files] == [("d.pdf", 3)]
    line = {
        "id": "1",
        "thread": "t",
        "author": "Ana",
        "text": "",
        "at": "2026-11-01T09:00:00+00:00",
    }
    pdf = {"name": "d.pdf", "mime": "application/pdf", "pages": 2}
    jsonl = read(Path("c.jsonl"), data=json.dumps({**line, "files": [pdf]}).encode())
    (record,) = jsonl.records
    assert isinstance(record.event, Message) and record.event.files[0].pages == 2
