"""One conversation as a list of messages: a pydantic-ai message history, or a chat list.

Both are read into one thread (named by the file, or `--thread`) the way the pydantic-ai hook
records a run, so a file and a live run give the same kind of thread:

- a user's prompt is a shared message by `user` (or the message's `name`), its images and
  documents as files; the model's text is a shared message by `assistant`;
- a model response that calls tools is one step by the assistant, its text alongside the calls
  kept in the step; the tools' results (and pydantic-ai's retry feedback) are the assistant's
  steps too, in the JSON the hook writes, so a view sends them back as tool calls;
- system prompts and instructions, the model's reasoning and empty messages are left out.

pydantic-ai (`ModelMessagesTypeAdapter` JSON): message `i` gives ids `{thread}:{i}.{k}`, `k`
counting what it gives. A record's time is the one the file states (its part's, else its
message's), else the later of the time before it and a synthetic time (`SYNTHETIC_START` plus
one second per message), so the same file always gives the same times; a time without an
offset is read as UTC.

A chat list (`[{"role", "content"}, ...]`, or `{"messages": [...]}`, as OpenAI's chat API takes
it): message `i` is `{thread}:{i}`, dated `SYNTHETIC_START` plus `i` seconds, since such lists
carry no times. Tool calls are paired with their results by `tool_call_id`.

Tool calls and their results become steps in the JSON of `history.steps`, as the pydantic-ai
hook writes them, so the view sends them back as tool parts.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pydantic
import pydantic_core
from pydantic_ai import messages as ai

from .contract import File, Message
from .errors import InputError
from .ingest import (
    ASSISTANT,
    SKIPPED_ROLES,
    SYNTHETIC_START,
    USER,
    Below,
    Reader,
    path_of,
    synthetic_at,
)
from .steps import Call, Calls, Feedback, Return, Returns, encode, prompt_content

Said = tuple[str, str, bool, tuple[File, ...], datetime | None]
"""What one record says: `(author, text, step, files, time the file states)`."""


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
                made.append(Message(id=f"{thread}:{i}.{k}", thread=thread, author=author,
                                    text=text, at=last, step=step, files=files))  # fmt: skip
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
        step = encode(one_result(Return(id=p.tool_call_id, name=p.tool_name, content=content,
                                     outcome=p.outcome)))  # fmt: skip
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


def chat(value: object, thread: str, reader: Reader) -> None:
    """Read a list of `{"role", "content"}` chat messages."""
    keys: tuple[str | int, ...] = ()
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value, keys = value["messages"], ("messages",)
    if not isinstance(value, list):
        reader.bad("$", f"a chat must be a list of messages, got {type(value).__name__}")
        return
    calls: dict[str, tuple[str, str]] = {}
    for position, item in enumerate(value):
        try:
            said = _chat_message(item, calls, f"{thread}:{position}")
            if said is None:
                continue
            author, text, step, files, _ = said
            made = Message(id=f"{thread}:{position}", thread=thread, author=author, text=text,
                           at=synthetic_at(position), step=step, files=files)  # fmt: skip
        except Below as exc:
            reader.bad(path_of(*keys, position, *exc.keys), str(exc))
            continue
        except InputError as exc:  # a lone surrogate in its text, say
            reader.bad(path_of(*keys, position), str(exc))
            continue
        reader.add(path_of(*keys, position), made)


CHAT_ROLES = (USER, ASSISTANT, "tool", "function", *SKIPPED_ROLES)
"""The roles of OpenAI's chat messages; any other is reported."""


def _chat_message(item: object, calls: dict[str, tuple[str, str]], id: str) -> Said | None:
    """One chat message; `calls` maps each call's id to its tool and caller, for its result."""
    if not isinstance(item, Mapping):
        raise InputError(f"a chat message must be an object, got {item!r:.80}")
    role, name = item.get("role"), item.get("name")
    if not isinstance(role, str) or not role:
        raise InputError(f"role must be a non-empty string, got {role!r}", field="role")
    if role not in CHAT_ROLES:
        raise Below(("role",), f"unknown role {role!r} (known: {', '.join(CHAT_ROLES)})")
    if name is not None and not isinstance(name, str):
        raise InputError(f"name must be a string, got {name!r}", field="name")
    text, files = _chat_content(item.get("content"))
    if role in SKIPPED_ROLES:
        return None
    if role in ("tool", "function"):
        if role == "tool":
            call = item.get("tool_call_id")
        else:  # an old function_call's result names the function, not the call
            call = calls.get(f"function:{name}", (None, ""))[0]
        if not isinstance(call, str) or call not in calls:
            field = "tool_call_id" if role == "tool" else "name"
            raise Below(
                (field,),
                f"a tool result for {item.get(field)!r}, which no earlier message calls",
            )
        tool, caller = calls[call]
        result = one_result(Return(id=call, name=tool, content=text))
        return caller, encode(result), True, files, None
    author = name or (ASSISTANT if role == "assistant" else role)
    made = _tool_calls(item, id)
    for call in made:
        calls[call.id] = (call.name, author)
        calls[f"function:{call.name}"] = (call.id, author)
    if made:
        return author, encode(Calls(calls=tuple(made), text=text)), True, files, None
    if item.get("content") is None:
        raise Below(("content",), "a message with no content and no tool calls")
    return (author, text, False, files, None) if text.strip() or files else None


def _tool_calls(item: Mapping[str, Any], id: str) -> list[Call]:
    """The calls an assistant message makes: `tool_calls`, or an old single `function_call`."""
    found = item.get("tool_calls") or ([item["function_call"]] if item.get("function_call") else [])
    if not isinstance(found, list):
        raise InputError(f"tool_calls must be a list, got {found!r:.80}", field="tool_calls")
    calls: list[Call] = []
    for k, call in enumerate(found):
        function = call.get("function", call) if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise InputError(f"tool_calls[{k}] has no function name: {call!r:.80}")
        call_id = call.get("id") if isinstance(call.get("id"), str) else f"{id}.{k}"
        arguments = function.get("arguments")
        if not (arguments is None or isinstance(arguments, str | dict)):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(Call(id=call_id, name=function["name"], args=arguments))
    return calls


def _chat_content(content: object) -> tuple[str, tuple[File, ...]]:
    """A string, null, or a list of parts: text parts joined by newlines, others as files."""
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise InputError(f"content must be text or a list, got {content!r:.80}", field="content")
    texts: list[str] = []
    files: list[File] = []
    for k, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, Mapping) and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif isinstance(part, Mapping) and isinstance(part.get("type"), str):
            files.append(_chat_file(part, k))
        else:
            raise Below(("content", k), f"must be a text or typed part, got {part!r:.80}")
    return "\n".join(texts), tuple(files)


def _chat_file(part: Mapping[str, Any], k: int) -> File:
    """A part that is not text, as a file keeping its URL (`image_url`), its provider's file id
    (`file`), or, for data sent inline, its type and size."""
    kind: str = part["type"]
    inner = part.get(kind)
    inner = inner if isinstance(inner, Mapping) else part
    url = inner.get("url") if isinstance(inner.get("url"), str) else inner.get("file_id")
    data = inner.get("file_data") or inner.get("data")
    name = inner.get("filename")
    mime = "image/*" if kind.startswith(("image", "input_image")) else None
    size = 0
    if isinstance(url, str) and url.startswith("data:"):
        data, url = url, None
    if isinstance(data, str):
        header, _, payload = data.rpartition(",")
        if header.startswith("data:"):
            mime = header.removeprefix("data:").split(";", 1)[0] or mime
        size = len(payload) * 3 // 4 - payload.count("=")  # base64's decoded length
    audio = inner.get("format")
    if kind == "input_audio" and isinstance(audio, str):
        mime, name = f"audio/{audio}", f"audio-{k}.{audio}"
    if not isinstance(name, str) or not name:
        tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] if isinstance(url, str) else ""
        name = tail if tail and ":" not in tail else f"{kind}-{k}"
    if isinstance(url, str) and mime == "image/*":
        mime = mimetypes.guess_type(name)[0] or mime
    return File(name=name, mime=mime, size=size, url=url if isinstance(url, str) else None)


def one_result(result: Return) -> Returns:
    """A step holding one tool's result."""
    return Returns(returns=(result,))
