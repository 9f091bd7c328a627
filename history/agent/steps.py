"""How a step's text holds an agent's tool calls and tool returns, so that they round-trip.

A step is a private message (`step` true) of the agent it belongs to (its `author`). The
pydantic-ai hook writes one step per model response that calls tools, and one per request
that returns their results; its text is one JSON object:

    {"tool_calls": [{"id": "c1", "name": "get_price", "args": {"item": "tea"}}], "text": "..."}
    {"tool_returns": [{"id": "c1", "name": "get_price", "content": 4200, "outcome": "success"}]}
    {"feedback": "..."}

`args` is the call's arguments as the model gave them (an object, a JSON string, or null);
`text` (optional) is what the model said alongside the calls; `content` is the result as JSON;
`outcome` is pydantic-ai's (`success`, `failed`, `denied`, `interrupted`, `retried`);
`feedback` is pydantic-ai's note about a response it could not use. Any other step text (from
an app with its own steps) is read as plain text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast, get_args

import pydantic_core
from pydantic_ai.messages import (
    CachePoint,
    FileUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserContent,
    UserPromptPart,
)

from ..contract import File
from ..lines import prefix, size
from ..processors.weight import pdf_pages

Outcome = Literal["success", "failed", "denied", "interrupted", "retried"]
OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))


@dataclass(frozen=True, kw_only=True)
class Call:
    """A tool call as a step holds it."""

    id: str
    name: str
    args: str | dict[str, Any] | None


@dataclass(frozen=True, kw_only=True)
class Return:
    """A tool's result as a step holds it."""

    id: str
    name: str
    content: Any
    """The result as JSON (what the model is shown)."""
    outcome: Outcome = "success"


@dataclass(frozen=True, kw_only=True)
class Calls:
    """A step that calls tools: a model response."""

    calls: tuple[Call, ...]
    text: str = ""
    """What the model said alongside the calls."""


@dataclass(frozen=True, kw_only=True)
class Returns:
    """A step that returns tool results: a request."""

    returns: tuple[Return, ...]


@dataclass(frozen=True, kw_only=True)
class Feedback:
    """pydantic-ai's feedback about a response it could not use."""

    text: str


Step = Calls | Returns | Feedback


def response_step(response: ModelResponse) -> Calls | None:
    """The step of a response that calls tools; None when it calls none."""
    calls = tuple(
        Call(id=p.tool_call_id, name=p.tool_name, args=_args(p.args))
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    if not calls:
        return None
    return Calls(calls=calls, text=response_text(response))


def response_text(response: ModelResponse) -> str:
    """What a response says, its text parts joined."""
    return "\n\n".join(p.content for p in response.parts if isinstance(p, TextPart) and p.content)


def request_steps(parts: Sequence[ModelRequestPart]) -> list[Returns | Feedback]:
    """The steps of a request's tool results and feedback, in that order (none when it has none)."""
    returns = tuple(
        Return(id=p.tool_call_id, name=p.tool_name, content=_jsonable(p.content), outcome=p.outcome)
        for p in parts
        if isinstance(p, ToolReturnPart)
    )
    steps: list[Returns | Feedback] = [Returns(returns=returns)] if returns else []
    steps += [Feedback(text=p.model_response()) for p in parts if isinstance(p, RetryFeedbackPart)]
    return steps


def encode(step: Step) -> str:
    """A step's text: one JSON object (see the module docstring)."""
    value: dict[str, Any]
    if isinstance(step, Calls):
        value = {"tool_calls": [{"id": c.id, "name": c.name, "args": c.args} for c in step.calls]}
        if step.text:
            value["text"] = step.text
    elif isinstance(step, Returns):
        value = {
            "tool_returns": [
                {"id": r.id, "name": r.name, "content": r.content, "outcome": r.outcome}
                for r in step.returns
            ]
        }
    else:
        value = {"feedback": step.text}
    return json.dumps(value, ensure_ascii=False)


def decode(text: str) -> Step | None:
    """The step a text holds, or None when it is not one of ours (then it is plain text)."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or len(value) > 2:
        return None
    try:
        if "tool_calls" in value:
            calls = tuple(_call(c) for c in value["tool_calls"])
            extra = value.get("text", "")
            if not calls or not isinstance(extra, str):
                return None
            return Calls(calls=calls, text=extra)
        if "tool_returns" in value and len(value) == 1:
            returns = tuple(_return(r) for r in value["tool_returns"])
            return Returns(returns=returns) if returns else None
        if isinstance(value.get("feedback"), str) and len(value) == 1:
            return Feedback(text=value["feedback"])
    except (TypeError, KeyError, ValueError):
        return None
    return None


def call_text(author: str, call: Call) -> str:
    """A call as plain text: for a call whose result is not in view, or nobody's view."""
    args = call.args if isinstance(call.args, str) else json.dumps(call.args, ensure_ascii=False)
    return f"{author} called {call.name} (call {call.id}) with {args}"


def return_text(author: str, result: Return) -> str:
    """A result as plain text: for a result whose call is not in view, or nobody's view."""
    content = json.dumps(result.content, ensure_ascii=False)
    return f"{author}'s call {result.id} of {result.name} returned ({result.outcome}): {content}"


def paired_calls(steps: Iterable[Calls | Returns | Feedback]) -> set[str]:
    """The ids of the calls whose result follows them among `steps`: those sent as tool parts."""
    called: set[str] = set()
    paired: set[str] = set()
    for step in steps:
        if isinstance(step, Calls):
            called.update(c.id for c in step.calls)
        elif isinstance(step, Returns):
            paired.update(r.id for r in step.returns if r.id in called)
    return paired


def step_messages(
    author: str,
    step: Calls | Returns | Feedback,
    paired: set[str],
    page: int,
    at: datetime,
    *,
    own: bool,
) -> Iterable[ModelMessage]:
    """A step as tool parts where paired, as text where not (all text when not `own`)."""
    lone: list[str]
    if isinstance(step, Feedback):
        lone = [step.text]
    elif isinstance(step, Calls):
        said = [step.text] if step.text else []
        parts: list[ModelResponsePart] = [TextPart(content=t) for t in said if own]
        parts += [
            ToolCallPart(tool_name=c.name, args=c.args, tool_call_id=c.id)
            for c in step.calls
            if c.id in paired
        ]
        if parts:
            yield ModelResponse(parts=parts, timestamp=at)
        lone = [] if own else [f"{author}: {t}" for t in said]
        lone += [call_text(author, c) for c in step.calls if c.id not in paired]
    else:
        results: list[ModelRequestPart] = [
            ToolReturnPart(
                tool_name=r.name,
                content=_content(r.content, page),
                tool_call_id=r.id,
                outcome=r.outcome,
                timestamp=at,
            )
            for r in step.returns
            if r.id in paired
        ]
        if results:
            yield ModelRequest(parts=results)
        lone = [return_text(author, r) for r in step.returns if r.id not in paired]
    if lone:
        yield ModelRequest(parts=[UserPromptPart(cut_text(t, page), timestamp=at) for t in lone])


def cut_text(text: str, page: int) -> str:
    """A text over `page` bytes as its head, with a note of how much was left out."""
    if size(text) <= page:
        return text
    head = prefix(text, page)
    return f"{head}\n[… {size(text) - size(head)} more bytes left out]"


def _content(content: object, page: int) -> object:
    """A tool's result, its head only when its JSON is too large for a prompt."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return content if size(text) <= page else cut_text(text, page)


def _call(value: object) -> Call:
    if not isinstance(value, dict) or not isinstance(value["id"], str):
        raise ValueError(value)
    args = value.get("args")
    if not (args is None or isinstance(args, str | dict)) or not isinstance(value["name"], str):
        raise ValueError(value)
    return Call(id=value["id"], name=value["name"], args=args)


def _return(value: object) -> Return:
    if not isinstance(value, dict) or not isinstance(value["id"], str):
        raise ValueError(value)
    outcome = value.get("outcome", "success")
    if outcome not in OUTCOMES or not isinstance(value["name"], str):
        raise ValueError(value)
    return Return(
        id=value["id"],
        name=value["name"],
        content=value.get("content"),
        outcome=cast(Outcome, outcome),
    )


def _args(args: object) -> str | dict[str, Any] | None:
    return args if args is None or isinstance(args, str) else dict(cast(dict[str, Any], args))


def _jsonable(content: object) -> Any:
    """A tool's result as JSON, as the model is shown it (anything unknown as its text)."""
    return pydantic_core.to_jsonable_python(content, fallback=str)


def prompt_content(content: str | Sequence[UserContent]) -> tuple[str, tuple[File, ...]]:
    """A user prompt's text (its text parts joined by newlines) and its other content as files.

    A file keeps where it is (a URL, or the provider's file id) and is named by what a person
    would recognise: the identifier it was given, else the name at the end of its URL.
    """
    if isinstance(content, str):
        return content, ()
    texts: list[str] = []
    files: list[File] = []
    for item in content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, CachePoint):
            continue
        elif (text := getattr(item, "content", None)) is not None and isinstance(text, str):
            texts.append(text)
        else:
            files.append(_file(item))
    return "\n".join(texts), tuple(files)


def _file(item: object) -> File:
    url: str | None = None
    name = getattr(item, "identifier", None)
    if isinstance(item, FileUrl):
        url = item.url
        tail = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        given = name != type(item)(url=url).identifier  # not the hash of its URL
        if not given and tail and ":" not in tail:
            name = tail
    elif isinstance(item, UploadedFile):
        url = item.file_id
    data = getattr(item, "data", b"")
    mime = getattr(item, "media_type", None)
    pdf = isinstance(data, bytes) and mime == "application/pdf"
    return File(
        name=str(name or getattr(item, "kind", "file")),
        mime=mime if isinstance(mime, str) else None,
        size=len(data) if isinstance(data, bytes) else 0,
        url=url if url and not url.startswith("data:") else None,
        pages=pdf_pages(data) if pdf else None,
    )
