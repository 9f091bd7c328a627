"""What OpenAI and Anthropic receive: pydantic-ai's own model classes, offline, two turns each.

Turn 2's request starts with turn 1's last request byte for byte (reasoning items, thinking
signatures and call ids included), the tool loop is well formed, and the run's new messages
hold the user's prompt.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.anthropic import AnthropicModelSettings
from pydantic_ai.settings import ModelSettings

from history import ThreadHistory, render_view
from history.agent.caching import facts, minimum_cacheable, split
from history.agent.providers import (
    NEXT,
    Measured,
    Reply,
    Wire,
    measure,
    recording_model,
)
from history.cli import main

from ..conftest import Opener, Run, exchange

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch.jsonl"
MODELS = ("openai-chat:gpt-4.1-mini", "openai:gpt-5.6", "anthropic:claude-sonnet-4-5")
TOOL_TURN = [
    Reply(thinking="Look at the start.", call=("zoom", {"label": "0+2"})),
    Reply(thinking="Found it.", text="We planned the launch."),
    Reply(text="Then the trailer."),
]
TEXT_TURN = [
    Reply(thinking="Easy.", text="We planned the launch."),
    Reply(text="Then the trailer."),
]


def items(body: dict[str, Any]) -> list[Any]:
    """The messages (or Responses input items) of a request body."""
    found = body.get("messages", body.get("input"))
    assert isinstance(found, list)
    return found


def tool_events(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The body's tool calls and results in order, as ("call" | "result", id)."""
    events: list[tuple[str, str]] = []
    for item in items(body):
        if item.get("type") in ("function_call", "function_call_output"):
            kind = "call" if item["type"] == "function_call" else "result"
            events.append((kind, item["call_id"]))
        for call in item.get("tool_calls") or ():
            events.append(("call", call["id"]))
        if item.get("role") == "tool":
            events.append(("result", item["tool_call_id"]))
        for block in item["content"] if isinstance(item.get("content"), list) else ():
            if block.get("type") == "tool_use":
                events.append(("call", block["id"]))
            elif block.get("type") == "tool_result":
                events.append(("result", block["tool_use_id"]))
    return events


def well_formed(events: list[tuple[str, str]]) -> bool:
    """Every call answered before the next calls, every result answering an open call."""
    open_ids: set[str] = set()
    answering = False
    for kind, id in events:
        if kind == "call":
            if answering and open_ids:
                return False
            answering = False
            open_ids.add(id)
        elif id not in open_ids:
            return False
        else:
            open_ids.remove(id)
            answering = True
    return not open_ids


async def two_turns(
    run: Run, model_name: str, replies: list[Reply]
) -> tuple[Wire, list[ModelMessage]]:
    await run.send(*exchange(["Plan the launch", *[f"item {k}" for k in range(13)]]))
    model, wire = recording_model(model_name, replies)
    agent = Agent(model, capabilities=[ThreadHistory(run.history, "t", agent="north", user="Ana")])
    first = await agent.run("What did we plan?")
    await run.history.wait()
    await agent.run("And then?")
    return wire, first.new_messages()


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("turn", ["text", "tool"])
async def test_turn_two_starts_with_turn_ones_last_request(
    open_history: Opener, model_name: str, turn: str
) -> None:
    async with open_history(summarizer="echo", tail=(60, 260), kept=2) as run:
        wire, new = await two_turns(run, model_name, TOOL_TURN if turn == "tool" else TEXT_TURN)
        recorded = await run.history.store.messages_after("t", 27, 100)

    last, second = items(wire.bodies[-2]), items(wire.bodies[-1])
    assert second[: len(last)] == last
    assert len(second) > len(last)
    assert all(well_formed(tool_events(body)) for body in wire.bodies)
    if turn == "tool":
        assert [kind for kind, _ in tool_events(wire.bodies[-1])] == ["call", "result"]
    kind, _ = split(model_name)
    text = json.dumps(second)
    if kind == "openai-responses":  # the reasoning items come back, encrypted content and all
        assert '"encrypted_content": "enc-1-' in text and '"id": "rs_1"' in text
    if kind == "anthropic":  # the thinking blocks come back with their signatures
        assert '"signature": "sig-1"' in text
    # The run's new messages start with the user's prompt, recorded with author and recipient.
    first = new[0]
    assert isinstance(first, ModelRequest)
    assert [p.content for p in first.parts if isinstance(p, UserPromptPart)] == [
        "Ana → north: What did we plan?"
    ]
    assert (recorded[0].message.author, recorded[0].message.to) == ("Ana", "north")


def test_a_request_is_measured_against_its_providers_minimum() -> None:
    assert minimum_cacheable("anthropic:claude-sonnet-4-5") == 1_024
    assert minimum_cacheable("anthropic:claude-opus-4-5") == 4_096
    assert minimum_cacheable("anthropic:claude-haiku-4-5") == 4_096
    assert minimum_cacheable("openai:gpt-5.6") == 1_024
    # Anthropic's table: Opus 5 from 512, Opus 4.8 from 1,024, Opus 4.7 from 2,048.
    assert minimum_cacheable("anthropic:claude-opus-5") == 512
    assert minimum_cacheable("anthropic:claude-opus-4-8") == 1_024
    assert minimum_cacheable("anthropic:claude-opus-4.7") == 2_048
    assert minimum_cacheable("anthropic:claude-opus-4-6") == 4_096
    assert minimum_cacheable("anthropic:claude-haiku-3-5") == 2_048
    body = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "word " * 1_100,
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "What now?"}]},
        ],
    }
    measured = measure("anthropic:claude-sonnet-4-5", body)
    assert (measured.marks, measured.max_marks) == (1, 4)
    assert (measured.cached, measured.tokens, measured.reaches) == (1_104, 1_107, True)
    assert not measure("anthropic:claude-opus-4-5", body).reaches


def marked_texts(body: dict[str, Any]) -> list[str]:
    """The text of every block of an Anthropic body that carries a cache mark, in order (the
    automatic mark, which the server places at the end, first)."""
    found = ["automatic"] if "cache_control" in body else []
    found += [str(t) for t in body.get("tools", []) if "cache_control" in t]
    system = body.get("system")
    found += [b["text"] for b in system if "cache_control" in b] if isinstance(system, list) else []
    for item in items(body):
        for block in item["content"] if isinstance(item["content"], list) else ():
            if "cache_control" in block:
                found.append(str(block.get("text", block)))
    return found


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"anthropic_cache_instructions": True},
        {"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True},
        {
            "anthropic_cache_instructions": True,
            "anthropic_cache_tool_definitions": True,
            "anthropic_cache_messages": True,
        },
        {"cache": True},
    ],
)
async def test_anthropic_marks_stay_within_four_the_full_blocks_mark_first(
    open_history: Opener, settings: AnthropicModelSettings
) -> None:
    async with open_history(summarizer="echo", tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(12)]))
        model, wire = recording_model("anthropic:claude-sonnet-4-5")
        hook = ThreadHistory(run.history, "t", agent="north", user="Ana", block_lines=16)
        agent = Agent(model, capabilities=[hook], model_settings=settings)
        await agent.run("Where are we?")
        outline = await run.history.outline("t")
    assert outline is not None and 16 < len(outline.lines) < 32  # a full block, a partial one
    marked = marked_texts(wire.bodies[0])
    others = sum(bool(v) for v in settings.values()) * (3 if "cache" in settings else 1)
    assert len(marked) == min(others + 2, 4)
    outline_marks = [m for m in marked if "+1|" in m]
    assert outline_marks and "\n0+1|" in outline_marks[0]  # the full block's mark is kept


def breakpoint_texts(value: object) -> list[str]:
    """The text of every block of an OpenAI body that carries an explicit cache breakpoint."""
    if isinstance(value, list):
        return [text for item in value for text in breakpoint_texts(item)]
    if not isinstance(value, dict):
        return []
    found = [str(value.get("text", value))] if "prompt_cache_breakpoint" in value else []
    return found + [t for v in value.values() for t in breakpoint_texts(v)]


@pytest.mark.parametrize("model_name", ["openai:gpt-5.6", "openai-chat:gpt-5.6"])
@pytest.mark.parametrize("settings", [{}, {"cache": True}])
async def test_openai_models_that_take_breakpoints_get_the_outlines_within_four(
    open_history: Opener, model_name: str, settings: ModelSettings
) -> None:
    """GPT-5.6 and later take explicit breakpoints (pydantic-ai maps `CachePoint` onto them):
    the view places the outline's, within the four a request may carry, the full block's
    first; a model before GPT-5.6 gets none."""
    async with open_history(summarizer="echo", tail=(30, 60), kept=2) as run:
        await run.send(*exchange([f"item {k}" for k in range(12)]))
        bodies = []
        for name in (model_name, model_name.replace("5.6", "5.5")):
            model, wire = recording_model(name)
            hook = ThreadHistory(run.history, "t", agent="north", user="Ana", block_lines=16)
            # Over Chat Completions OpenAI takes no tools while GPT-5.6 reasons (pydantic-ai
            # 2.78 refuses such a request before it is sent), so the app turns thinking off.
            chat: ModelSettings = {"thinking": False} if name.startswith("openai-chat:") else {}
            agent = Agent(model, capabilities=[hook], model_settings=settings | chat)
            await agent.run("Where are we?", instructions="Be brief.")
            bodies.append(wire.bodies[0])
        outline = await run.history.outline("t")
    assert outline is not None and 16 < len(outline.lines) < 32  # a full block, a partial one
    marked, older = breakpoint_texts(bodies[0]), breakpoint_texts(bodies[1])
    outline_marks = [m for m in marked if "+1|" in m]
    assert 0 < len(marked) <= facts(model_name).marks == 4
    assert len(outline_marks) == (1 if settings else 2)  # the app's own marks come first
    assert "\n0+1|" in outline_marks[0]  # the full block's mark is kept
    assert older == [] and facts(model_name.replace("5.6", "5.5")).marks == 0


def test_cache_facts_come_from_pydantic_ais_profiles() -> None:
    """Retention is the profile's; the write premium is the provider's for it."""
    anthropic, openai, older = (
        facts(m) for m in ("anthropic:claude-sonnet-4-5", "openai:gpt-5.6", "openai:gpt-5.5")
    )
    assert (anthropic.retention, anthropic.write, anthropic.marks) == (
        timedelta(minutes=5),
        1.25,
        4,
    )
    assert (openai.retention, openai.write, openai.marks) == (timedelta(minutes=30), 1.25, 4)
    assert (older.retention, older.write, older.marks) == (None, 1.0, 0)


async def test_render_view_shows_what_a_named_provider_receives_and_records_nothing(
    open_history: Opener,
) -> None:
    async with open_history(summarizer="echo", tail=(60, 260), kept=2) as run:
        await run.send(*exchange(["Plan the launch", *[f"item {k}" for k in range(13)]]))
        before = await run.history.store.messages_after("t", -1, 1_000)
        shown = await render_view(
            run.history, "t", agent="north", model="anthropic:claude-sonnet-4-5"
        )
        after = await run.history.store.messages_after("t", -1, 1_000)
        openai = await render_view(run.history, "t", agent="north", model="openai:gpt-5.6")
        older = await render_view(run.history, "t", agent="north", model="openai:gpt-5.5")
    assert after == before  # read only
    request = shown.request
    assert request is not None and openai.request is not None
    m = request.measured
    assert m == measure(m.model, request.body)  # the figures are the recorded body's
    assert (m.marks, m.max_marks, m.minimum) == (1, 4, 1_024)
    # The request carries more than the view: instructions, tool definitions, the framing.
    assert shown.tokens < m.tokens and 0 < m.cached < m.tokens and not m.reaches
    last = items(request.body)[-1]["content"][-1]["text"]
    assert last == f"user → north: {NEXT}"
    assert "0+1|Ana → north: Plan the launch" in json.dumps(
        items(request.body)[0], ensure_ascii=False
    )
    # GPT-5.6 takes explicit breakpoints: the outline's, its cached prefix ending there.
    o = openai.request.measured
    assert (o.marks, o.max_marks) == (1, 4) and 0 < o.cached < o.tokens
    assert older.request is not None
    assert "prompt_cache_breakpoint" not in json.dumps(older.request.body)
    old = older.request.measured  # no marks: the prefix it caches ends with the outline
    assert (old.marks, old.max_marks) == (0, 0) and 0 < old.cached < old.tokens


def test_the_prompt_command_prints_the_providers_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    assert main(["ingest", str(EXAMPLE), "--tail", "40,80", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["prompt", "t", "--db", str(db), "--model", "anthropic:claude-sonnet-4-5"]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    measured = measure("anthropic:claude-sonnet-4-5", body)
    assert err == measured.summary() + "\n"
    assert err.startswith("anthropic:claude-sonnet-4-5: ") and "1 of 4 cache marks" in err
    assert main(["prompt", "t", "--db", str(db), "--model", "nope:x"]) == 2
    assert "unknown model 'nope:x'" in capsys.readouterr().err


def test_a_turn_costs_its_cached_prefix_at_the_read_price_once_it_reaches_the_minimum() -> None:
    short = Measured(
        model="anthropic:claude-sonnet-4-5",
        tokens=900,
        bytes=1,
        marks=1,
        max_marks=4,
        cached=800,
        minimum=1_024,
    )
    assert short.turn_cost() == 900.0
    long = replace(short, tokens=3_000, cached=2_000)
    assert long.turn_cost() == pytest.approx(2_000 * 0.1 + 1_000)
