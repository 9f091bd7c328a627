"""`chat-outline prompt` shows what the thread's agent is sent: the agent the demo shows and the
hook is given, the thread's own settings, and with `--model` the request that provider gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from history import History, HistorySettings, ThreadHistory, prompt_text
from history.agent.providers import Sent, provider_request
from history.cli import _demo as demo
from history.cli import main
from history.processors.weight import tokens

DEMO_SETTINGS = HistorySettings(
    summarizer="echo", tail=demo.TAIL, outline=demo.OUTLINE, line=demo.LINE
)
"""What the demo builds its thread with (its own defaults, no option given)."""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HISTORY_TAIL", raising=False)
        assert main(["demo", "--db", str(db), "--depth", "1"]) == 0
    return db


def prompt(capsys: pytest.CaptureFixture[str], db: Path, *argv: str) -> tuple[dict[str, Any], str]:
    capsys.readouterr()
    assert main(["prompt", demo.THREAD, "--db", str(db), "--json", *argv]) == 0
    out, err = capsys.readouterr()
    shown: dict[str, Any] = json.loads(out)
    return shown, err


@pytest.mark.slow
def test_prompt_is_what_the_capability_sends_the_demos_agent(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown, err = prompt(capsys, store)
    assert shown["agent"] == demo.AGENT and err.startswith(f"chat-outline: {demo.AGENT}'s view")
    sent: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(messages)
        return ModelResponse(parts=[TextPart("ok")])

    async def run() -> None:
        async with History(DEMO_SETTINGS, store=store) as chat:
            hook = ThreadHistory(chat, demo.THREAD, agent=demo.AGENT, record=False)
            await Agent(FunctionModel(model), capabilities=[hook]).run("What is left to do?")

    anyio.run(run)
    *history, prompted = sent[0]  # the thread's view, then the run's prompt
    assert prompt_text([prompted]) == "[user]\nuser → north: What is left to do?\n"
    assert shown["text"] == prompt_text(history)
    assert shown["tokens"] == tokens(prompt_text(history), DEMO_SETTINGS.encoding) > 2_000


@pytest.mark.slow
def test_the_model_report_is_the_request_that_provider_gets(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown, _ = prompt(capsys, store, "--model", "openai:gpt-5.6")

    async def sent() -> Sent:
        async with History(DEMO_SETTINGS, store=store) as chat:
            return await provider_request(chat, demo.THREAD, "openai:gpt-5.6", agent=demo.AGENT)

    request = anyio.run(sent)
    assert shown["request"]["body"] == request.body
    assert shown["request"]["tokens"] == request.measured.tokens
    assert shown["request"]["reaches"] is True  # the demo's prefix is cached, as docs say
