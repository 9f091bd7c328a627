"""What a named provider receives: pydantic-ai's own model classes, offline.

    model, wire = recording_model("anthropic:claude-sonnet-4-5")
    ...  # run an agent on `model`
    wire.bodies[-1]  # the JSON body of the last request, as Anthropic would have received it

A `Wire` is an HTTP transport that records every request body and answers with canned replies
in the provider's own format (text, a tool call, reasoning or thinking), so nothing leaves the
machine and the API keys are fakes. `measure` sizes a recorded request: its tokens, its cache
marks, and whether the prefix it marks for caching reaches the provider's minimum.

Where the numbers come from: `caching.facts` (pydantic-ai's model profiles, and a cited table
for what they do not hold). Anthropic takes up to 4 `cache_control` marks a request, OpenAI's
GPT-5.6 and later up to 4 explicit breakpoints (pydantic-ai maps `CachePoint` onto both); earlier
OpenAI models cache the longest prefix they have seen, of 1,024 tokens or more, with no marks.
Tokens are counted with the thread's tokenizer (tiktoken's `cl100k_base` by default, the one
shipped offline): OpenAI's current models use `o200k_base` and Claude its own, so a provider's
own count differs by a few percent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from pydantic_ai import Agent
from pydantic_ai.messages import CompactionPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ..plugin import Reading
from ..processors.weight import tokens
from .caching import Kind, facts, split
from .capability import ThreadHistory
from .prompt import view


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A canned answer: what the model says, calls and thinks, in any provider's format."""

    text: str = ""
    call: tuple[str, dict[str, Any]] | None = None
    """A tool call: its tool's name and arguments."""
    thinking: str = ""
    """Reasoning (Responses, with encrypted content) or thinking (Anthropic, with a signature)."""


@dataclass(kw_only=True)
class Wire:
    """An offline HTTP endpoint: records request bodies, answers with the next canned reply.

    When the replies run out, it answers with the last again (a plain "ok" when there are none).
    """

    kind: Kind
    model: str
    replies: list[Reply] = field(default_factory=list[Reply])
    bodies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def answer(self, body: bytes) -> httpx2.Response:
        request = json.loads(body)
        self.bodies.append(request)
        n = len(self.bodies)
        reply = self.replies[min(n, len(self.replies)) - 1] if self.replies else Reply(text="ok")
        answer = _REPLIES[self.kind](reply, n, self.model)
        if not request.get("stream"):
            return httpx2.Response(200, json=answer)
        events = "".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _anthropic_events(answer)
        )
        return httpx2.Response(
            200, content=events.encode(), headers={"content-type": "text/event-stream"}
        )

    def client(self) -> httpx2.AsyncClient:
        """An HTTP client whose every request this wire answers."""
        return httpx2.AsyncClient(transport=httpx2.MockTransport(lambda r: self.answer(r.content)))


def recording_model(model: str, replies: list[Reply] | None = None) -> tuple[Model, Wire]:
    """pydantic-ai's model class for `model`, wired to an offline `Wire` with fake keys."""
    kind, name = split(model)
    wire = Wire(kind=kind, model=name, replies=list(replies or ()))
    if kind == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        provider = AnthropicProvider(api_key="offline", http_client=wire.client())
        return AnthropicModel(name, provider=provider), wire
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    openai = OpenAIProvider(api_key="offline", http_client=wire.client())
    if kind == "openai-chat":
        return OpenAIChatModel(name, provider=openai), wire
    return OpenAIResponsesModel(name, provider=openai), wire


@dataclass(frozen=True, kw_only=True)
class Measured:
    """A recorded request, sized."""

    model: str
    tokens: int
    """Tokens of what the model reads: instructions, messages and tool definitions."""
    bytes: int
    """Size of the request body, as sent."""
    marks: int
    """Cache marks: Anthropic's `cache_control`, OpenAI's `prompt_cache_breakpoint`."""
    max_marks: int
    cached: int
    """Tokens of the prefix up to the last mark, or, for a model that takes none, up to the
    outline's end (it caches the longest prefix it has seen; this one holds until the next
    cut)."""
    minimum: int
    """The fewest tokens the provider caches."""

    @property
    def reaches(self) -> bool:
        """Whether the cached prefix is long enough for the provider to cache it."""
        return self.cached >= self.minimum

    def turn_cost(self, *, read: float = 0.1) -> float:
        """The request's input cost in uncached-token equivalents, once its prefix is cached
        (a turn between cuts): cached tokens at `read` (0.1 at Anthropic and OpenAI), the rest
        at 1; all at 1 when the prefix is too short to cache."""
        if not self.reaches:
            return float(self.tokens)
        return self.cached * read + (self.tokens - self.cached)

    def summary(self) -> str:
        """One line for the command line and the README."""
        verdict = "cached" if self.reaches else f"too short to cache (minimum {self.minimum:,})"
        marks = f"{self.marks} of {self.max_marks} cache marks" if self.max_marks else "no marks"
        if not self.cached:
            verdict = "nothing to cache"
        return (
            f"{self.model}: {self.tokens:,} tokens ({self.bytes:,} bytes); {marks}; "
            f"prefix to cache {self.cached:,} tokens: {verdict}"
        )


def measure(
    model: str,
    body: dict[str, Any],
    *,
    outline_end: str | None = None,
    encoding: str = "cl100k_base",
) -> Measured:
    """Size a recorded request body of `model`'s provider.

    Args:
        model: the `provider:name` the body was recorded for.
        body: the JSON body.
        outline_end: for a model that caches without marks (OpenAI's before GPT-5.6): the
            outline's last line, where the prefix that holds until the next cut ends; None when
            there is no outline.
        encoding: the tiktoken encoding to count with.
    """
    cache = facts(model)
    content = pieces(model, body, encoding=encoding)
    if cache.marks:
        upto = max((k + 1 for k, p in enumerate(content) if p.marked), default=0)
    else:
        ends = [k + 1 for k, p in enumerate(content) if outline_end and outline_end in p.text]
        upto = max(ends, default=0)
    counts = [p.tokens for p in content]  # by piece: prefixes add up
    return Measured(
        model=model,
        tokens=sum(counts),
        bytes=len(json.dumps(body, ensure_ascii=False).encode()),
        marks=sum(p.marked for p in content),
        max_marks=cache.marks,
        cached=sum(counts[:upto]),
        minimum=cache.minimum,
    )


@dataclass(frozen=True, kw_only=True)
class Piece:
    """A piece of a request, as the provider's cache reads it."""

    text: str
    """What the model reads of it."""
    tokens: int
    marked: bool
    """Whether it carries a cache mark: the prefix up to it is cached."""


def pieces(model: str, body: dict[str, Any], *, encoding: str = "cl100k_base") -> list[Piece]:
    """A recorded body of `model`'s provider as its pieces in cache order, each with its tokens:
    what `measure` adds up."""
    return [
        Piece(text=text, tokens=tokens(text, encoding), marked=marked)
        for text, marked in _content(split(model)[0], body)
    ]


def _content(kind: Kind, body: dict[str, Any]) -> Iterator[tuple[str, bool]]:
    """The body's pieces in the provider's cache order (tools, system, messages), as text the
    model reads and whether each carries a cache mark."""
    for tool in body.get("tools", []):
        marked = _marked(tool)
        yield json.dumps(_unmarked(tool), ensure_ascii=False), marked
    system = body.get("system", body.get("instructions"))
    if isinstance(system, str):
        yield system, False
    elif isinstance(system, list):
        for block in system:
            yield _text(block), _marked(block)
    for item in body.get("messages", body.get("input", [])):
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            for block in content:
                yield _text(block), _marked(block)
        else:
            yield _text(item), False


def _text(value: object) -> str:
    """What the model reads of a piece: its text fields, or its JSON without ids or signatures."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "content", "thinking", "arguments", "output"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(_unmarked(value), ensure_ascii=False)


MARKS = ("cache_control", "prompt_cache_breakpoint")
"""The keys a provider's cache mark is sent as (Anthropic's, OpenAI's)."""


def _marked(value: object) -> bool:
    return isinstance(value, dict) and any(key in value for key in MARKS)


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k not in MARKS}
    return value


def _chat(reply: Reply, n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.call is not None:
        name, args = reply.call
        message["tool_calls"] = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.call else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _responses(reply: Reply, n: int, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.thinking:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "encrypted_content": f"enc-{n}-{reply.thinking}",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
            }
        )
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    if reply.call is not None:
        name, args = reply.call
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _anthropic(reply: Reply, n: int, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": f"sig-{n}"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    if reply.call is not None:
        name, args = reply.call
        content.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args})
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.call else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


_EMPTY: dict[str, dict[str, Any]] = {
    "text": {"text": ""},
    "thinking": {"thinking": "", "signature": ""},
    "tool_use": {"input": {}},
}
"""What a streamed block starts as, before its deltas."""


def _anthropic_events(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """An Anthropic message as the events of its stream (for a request that streams)."""
    content = message["content"]
    start = {**message, "content": [], "stop_reason": None}
    yield {"type": "message_start", "message": start}
    for k, block in enumerate(content):
        kind = block["type"]
        empty = _EMPTY.get(kind, {})
        yield {"type": "content_block_start", "index": k, "content_block": {**block, **empty}}
        if kind == "text":
            yield _delta(k, {"type": "text_delta", "text": block["text"]})
        elif kind == "thinking":
            yield _delta(k, {"type": "thinking_delta", "thinking": block["thinking"]})
            yield _delta(k, {"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            arguments = json.dumps(block["input"])
            yield _delta(k, {"type": "input_json_delta", "partial_json": arguments})
        yield {"type": "content_block_stop", "index": k}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield {"type": "message_stop"}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


_REPLIES: dict[Kind, Callable[[Reply, int, str], dict[str, Any]]] = {
    "openai-chat": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
}


NEXT = "(the next message)"
"""What stands for the user's next message in a request shown before it is written."""


@dataclass(frozen=True, kw_only=True)
class Sent:
    """A request as a provider would receive it."""

    body: dict[str, Any]
    """The JSON body, as sent."""
    measured: Measured


async def provider_request(
    history: Reading,
    thread: str,
    model: str,
    *,
    agent: str = "assistant",
    user: str = "user",
    block_lines: int | None = None,
    settings: ModelSettings | None = None,
) -> Sent:
    """What `model`'s provider would receive from `agent` of `thread` at its next turn.

    The agent runs once through `ThreadHistory` on pydantic-ai's own model class, offline
    (`recording_model`), reading only: nothing is recorded. The user's next message is `NEXT`.
    `settings` are the model settings the app runs with (its cache settings change the marks).
    """
    llm, wire = recording_model(model)
    hook: ThreadHistory[None] = ThreadHistory(
        history, thread, agent=agent, user=user, block_lines=block_lines, record=False
    )
    await Agent(llm, capabilities=[hook], model_settings=settings).run(NEXT)
    outline = [
        p.content
        for m in await view(history, thread, agent=agent, block_lines=block_lines)
        for p in m.parts
        if isinstance(p, CompactionPart)
    ]
    end = (outline[-1] or "").rsplit("\n", 1)[-1] if outline else None
    body = wire.bodies[0]
    measured = measure(model, body, outline_end=end, encoding=history.settings.encoding)
    return Sent(body=body, measured=measured)
