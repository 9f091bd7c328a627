"""A pydantic-ai message history (`ModelMessagesTypeAdapter` JSON) read into one thread.

The history is read into one thread (named by the file, or `--thread`) the way the pydantic-ai
hook records a run, so a file and a live run give the same kind of thread:

- a user's prompt is a shared message by `user`, its images and documents as files; the model's
  text is a shared message by `assistant`;
- a model response that calls tools is one step by the assistant, its text alongside the calls
  kept in the step; the tools' results (and pydantic-ai's retry feedback) are the assistant's
  steps too, in the JSON of `history.agent.steps` the hook writes, so a view sends them back as tool
  calls;
- system prompts and instructions, the model's reasoning and empty messages are left out.

Message `i` gives ids `{thread}:{i}.{k}`, `k` counting what it gives. A record's time is the one
the file states (its part's, else its message's), else the later of the time before it and a
synthetic time (`SYNTHETIC_START` plus one second per message), so the same file always gives
the same times; a time without an offset is read as UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pydantic
import pydantic_core
from pydantic_ai import messages as ai

from ..agent.steps import Call, Calls, Feedback, Return, Returns, encode, prompt_content
from ..contract import Message
from ..errors import InputError
from ._records import ASSISTANT, SYNTHETIC_START, USER, Reader, Said, path_of, synthetic_at


def pydantic_ai(value: object, thread: str, reader: Reader) -> None:
    """Read a pydantic-ai message history, as the hook would have recorded its run."""
    if not isinstance(value, list):
        reader.bad("$", f"a pydantic-ai history is a list of messages, got {type(value).__name__}")
        return
    last = SYNTHETIC_START
    called: set[str] = set()
    for i, raw in enumerate(value):
        try:
            (message,) = ai.ModelMessagesTypeAdapter.validate_json(json.dumps([raw]))
        except pydantic.ValidationError as exc:
            reasons: dict[str, list[str]] = {}
            for error in exc.errors():
                reasons.setdefault(_error_path(raw, i, error["loc"][1:]), []).append(error["msg"])
            for where, said in reasons.items():
                reader.bad(where, "; or ".join(said))
            continue
        stray = _stray_result(message, called)
        if stray is not None:
            k, part = stray
            reader.bad(
                path_of(i, "parts", k),
                f"a tool result for call {part.tool_call_id!r}, which no earlier message makes",
            )
            continue
        if isinstance(message, ai.ModelResponse):
            called.update(p.tool_call_id for p in message.parts if isinstance(p, ai.ToolCallPart))
        stated = _given(raw, message.timestamp)
        try:
            made = []
            for k, (author, text, step, files, at) in enumerate(_records(message, raw)):
                last = at or stated or max(last, synthetic_at(i))
                made.append(
                    Message(
                        id=f"{thread}:{i}.{k}",
                        thread=thread,
                        author=author,
                        text=text,
                        at=last,
                        step=step,
                        files=files,
                    )
                )
        except InputError as exc:  # a lone surrogate in its text, say
            reader.bad(path_of(i), str(exc))
            continue
        for m in made:
            reader.add(path_of(i), m)


def _stray_result(
    message: ai.ModelMessage, called: set[str]
) -> tuple[int, ai.ToolReturnPart] | None:
    """The first tool result of a request that answers no call made before it."""
    if isinstance(message, ai.ModelRequest):
        for k, part in enumerate(message.parts):
            if isinstance(part, ai.ToolReturnPart) and part.tool_call_id not in called:
                return k, part
    return None


def _records(message: ai.ModelMessage, raw: Mapping[str, Any]) -> list[Said]:
    if isinstance(message, ai.ModelResponse):
        calls = [
            Call(id=p.tool_call_id, name=p.tool_name, args=_args(p))
            for p in message.parts
            if isinstance(p, ai.ToolCallPart)
        ]
        text = "\n\n".join(
            p.content for p in message.parts if isinstance(p, ai.TextPart) and p.content
        )
        if calls:
            return [(ASSISTANT, encode(Calls(calls=tuple(calls), text=text)), True, (), None)]
        return [(ASSISTANT, text, False, (), None)] if text.strip() else []
    parts = list(zip(message.parts, raw["parts"], strict=True))
    returns = [(p, r) for p, r in parts if isinstance(p, ai.ToolReturnPart)]
    out: list[Said] = []
    for p, r in returns:  # one step per outcome, in order, as the hook keeps them
        content = pydantic_core.to_jsonable_python(p.content, fallback=str)
        result = Return(id=p.tool_call_id, name=p.tool_name, content=content, outcome=p.outcome)
        step = encode(Returns(returns=(result,)))
        out.append((ASSISTANT, step, True, (), _given(r, p.timestamp)))
    out += [
        (ASSISTANT, encode(Feedback(text=p.model_response())), True, (), _given(r, p.timestamp))
        for p, r in parts
        if isinstance(p, ai.RetryFeedbackPart)
    ]
    for part, stated in parts:
        if isinstance(part, ai.UserPromptPart):
            text, files = prompt_content(part.content)
            if text.strip() or files:
                out.append((USER, text, False, files, _given(stated, part.timestamp)))
    return out


def _args(part: ai.ToolCallPart) -> str | dict[str, Any] | None:
    """A call's arguments as the model gave them: text, an object, or none."""
    args = part.args
    if args is None or isinstance(args, str):
        return args
    return {str(key): value for key, value in args.items()}


def _given(raw: object, parsed: object) -> datetime | None:
    """A time the file states (a default filled in by pydantic would be today's)."""
    if not isinstance(raw, Mapping) or raw.get("timestamp") is None:
        return None
    if not isinstance(parsed, datetime):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _error_path(raw: object, index: int, loc: Sequence[int | str]) -> str:
    """The JSON path of a validation error, without pydantic's union tags."""
    keys: list[int | str] = [index]
    for key in loc:
        found, child = _child(raw, key)
        if found:  # else it is a union's tag, not a key of the file
            raw = child
            keys.append(key)
    return path_of(*keys)


def _child(raw: object, key: int | str) -> tuple[bool, object]:
    if isinstance(raw, list) and isinstance(key, int) and 0 <= key < len(raw):
        return True, raw[key]
    if isinstance(raw, Mapping) and key in raw:
        return True, raw[key]
    return False, None
