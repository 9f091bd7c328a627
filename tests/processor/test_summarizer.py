"""Asking for a line: the exact task texts, too long and empty answers, tries, then cut."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import ConfigurationError, History, HistorySettings
from history.contract import Reply, Task
from history.lines import size
from history.summarizer import EMPTY_NOTE, INSTRUCTIONS, write

from ..conftest import Opener, exchange, message

pytestmark = pytest.mark.anyio

RULER_64 = "at most 64 bytes (about 8 words), no longer than this ruler:\n" + "-" * 64


class ScriptedAnswers:
    """An ask function that answers the nth try with the nth answer, recording the prompts."""

    def __init__(self, *answers: str) -> None:
        self.answers = answers
        self.asked: list[tuple[str, ...]] = []

    async def __call__(self, task: Task, prompts: Sequence[str], previous: Sequence[str]) -> Reply:
        self.asked.append(tuple(prompts))
        return Reply(text=self.answers[len(previous)])


TASK = Task(thread="t", level=0, index=3, prompt="Compaction: ...", input="a\nb")


async def test_a_fitting_answer_is_normalised_and_used() -> None:
    ask = ScriptedAnswers("  Ana   asked\n for a trailer ")
    result = await write(TASK, ask, limit=64, tries=3)
    assert result.line == "Ana asked for a trailer"
    assert result.prompts == ("Compaction: ...",) and result.outcome == "fit"


async def test_too_long_is_asked_again_in_the_same_conversation_then_cut() -> None:
    # 62 ASCII bytes then "é" (2 bytes) then "€" (3 bytes): the limit falls inside the euro sign.
    long = "x" * 62 + "é€ and more"
    longer = long + " still more"
    ask = ScriptedAnswers(longer, long, longer)
    result = await write(TASK, ask, limit=64, tries=3)
    note = (
        "Too long: your line is {} bytes and the limit is 64. Write the whole line again, "
        "dropping the least valuable items, so that it ends before the mark:\n{}|<- LIMIT"
    )
    assert result.prompts == (
        "Compaction: ...",
        note.format(size(longer), "x" * 62 + "é"),
        note.format(size(long), "x" * 62 + "é"),
    )
    assert result.answers == (longer, long, longer)
    # The shortest answer is cut: 61 bytes of whole characters, stripped, then "…".
    assert result.line == "x" * 61 + "…"
    assert size(result.line) == 64 and result.outcome == "cut"
    assert ask.asked == [result.prompts[:1], result.prompts[:2], result.prompts]


async def test_the_cut_never_splits_a_character() -> None:
    ask = ScriptedAnswers("é" * 40, "é" * 40, "é" * 40)
    result = await write(TASK, ask, limit=64, tries=3)
    assert result.line == "é" * 30 + "…"  # 60 bytes + 3: 61 would split an é


async def test_an_empty_answer_is_asked_again_and_all_empty_cuts_the_input() -> None:
    ask = ScriptedAnswers("", " \n ", "")
    result = await write(TASK, ask, limit=64, tries=3)
    assert result.prompts == ("Compaction: ...", EMPTY_NOTE, EMPTY_NOTE)
    assert result.line == "a b…"


async def test_the_shortest_non_empty_answer_wins_the_earliest_among_equals() -> None:
    ask = ScriptedAnswers("b" * 70, "", "a" * 70)
    result = await write(TASK, ask, limit=64, tries=3)
    assert result.prompts[2] == EMPTY_NOTE
    assert result.line == "b" * 61 + "…"


async def test_the_exact_tasks_with_chat_and_merge(open_history: Opener) -> None:
    long = [f"{k} " + "word " * 20 for k in range(6)]  # each over 64 bytes
    async with open_history(line=64, tail=(1, 2), kept=1) as run:
        await run.send(*[message(k, text) for k, text in enumerate(long)])
    leaf = {a.index: a.prompts[0] for a in run.asks if a.level == 0}
    assert leaf[0] == (
        f"Compaction: compress message 0 into one line of {RULER_64}\n"
        f"<input>\nAna → north: {long[0]}\n</input>"
    )
    assert leaf[4] == (
        f"Compaction: compress message 4 into one line of {RULER_64}\n"
        "<chat>\nS0\nS1\nS2\nS3\n</chat>\n"
        f"<input>\nAna → north: {long[4]}\n</input>"
    )
    # "S0\nS1" fits 64 bytes, so the first merges are joins; level 2 is "S0\nS1\nS2\nS3": a join.
    assert [a.level for a in run.asks] == [0, 0, 0, 0, 0]


async def test_a_merge_over_the_limit_asks_with_its_labels(open_history: Opener) -> None:
    text = "word " * 10  # its line is 65 bytes: echo answers it normalised, 64 bytes
    async with open_history(summarizer="echo", line=64, tail=(1, 2), kept=1) as run:
        await run.send(*[message(k, text) for k in range(3)])
    merges = [a for a in run.asks if a.level == 1]
    assert [a.prompts[0] for a in merges] == [
        f"Compaction: merge lines 0+1 and 1+1, adjacent, into one line of {RULER_64}\n"
        f"<input>\nAna → north: {text.strip()}\nAna → north: {text.strip()}\n</input>"
    ]
    assert [a.level for a in run.asks] == [0, 0, 1]


@pytest.mark.slow
async def test_a_huge_message_is_sent_bounded(open_history: Opener) -> None:
    huge = "é" * 5_000_000  # 10 MB
    # Without the cut gap: with it, the huge message's own weight sets the floor, and it stays.
    async with open_history(summarizer="echo", tail=(10, 20), kept=1, cut_gap=False) as run:
        await run.send(message(0, huge), message(1, "ok"))
        stored = await run.history.store.message("t-0")
    assert stored is not None and stored.message.text == huge
    (ask,) = run.asks
    task = ask.prompts[0]
    assert size(task) < 64_000 + 1_000
    dropped = size("Ana → north: " + huge) - 31_999 - 32_000  # the head ends on a whole é
    assert f" […{dropped} bytes left out…] " in task
    assert size(ask.line) <= 512


async def test_a_pydantic_ai_model_gets_the_instructions_and_the_conversation(
    open_history: Opener,
) -> None:
    seen: list[list[ModelMessage]] = []
    instructions: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        instructions.append(info.instructions)
        return ModelResponse(parts=[TextPart("x" * 600 if len(seen) == 1 else "Ana: short")])

    long = "word " * 200
    async with open_history(model=FunctionModel(model), tail=(1, 2), kept=1) as run:
        await run.send(message(0, long), message(1, "ok"))
    assert instructions == [INSTRUCTIONS, INSTRUCTIONS]
    (ask,) = run.asks
    assert ask.line == "Ana: short" and ask.answers == ("x" * 600, "Ana: short")
    second = seen[1]
    assert [type(m).__name__ for m in second] == ["ModelRequest", "ModelResponse", "ModelRequest"]
    again = second[-1].parts[-1]
    assert isinstance(again, UserPromptPart) and again.content == ask.prompts[1]


def test_startup_refuses_a_summarizer_that_cannot_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="nope:model"):
        History(HistorySettings(summarizer="nope:model"), store=":memory:")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        History(HistorySettings(summarizer="openai:gpt-4.1-nano"), store=":memory:")
    with pytest.raises(ConfigurationError, match="tokenizer"):
        History(HistorySettings(summarizer="echo", encoding="no_such"), store=":memory:")


def test_a_real_model_name_resolves_without_a_network_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    history = History(HistorySettings(summarizer="openai:gpt-4.1-nano"), store=":memory:")
    assert history.summarizer.name == "openai:gpt-4.1-nano"


def test_exchange_helper_makes_pairs() -> None:
    assert [m.author for m in exchange(["a"])] == ["Ana", "north"]
