"""A list of `{"role", "content"}` chat messages, as OpenAI's chat API takes it, read into
one thread.

The list (`[{"role", "content"}, ...]`, or `{"messages": [...]}`) is read into one thread (named
by the file, or `--thread`) the way the pydantic-ai hook records a run:

- a user's message is a shared message by `user` (or the message's `name`), its images, audio
  and documents as files; the model's text is a shared message by `assistant`;
- a message that calls tools is one step by its author, its text kept in the step; a tool's
  result is its caller's step, paired with its call by `tool_call_id` (an old `function_call`'s
  result by the function's name), in the JSON of `history.agent.steps` the hook writes, so a view
  sends them back as tool calls;
- system and developer messages and empty messages are left out.

Message `i` is `{thread}:{i}`, dated `SYNTHETIC_START` plus `i` seconds, since such lists carry
no times.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import mimetypes
from collections.abc import Mapping
from typing import Any

from ..agent.steps import Call, Calls, Return, Returns, encode
from ..contract import File, Message
from ..errors import InputError
from ..processors.weight import pdf_pages
from ._records import ASSISTANT, SKIPPED_ROLES, USER, Below, Reader, Said, path_of, synthetic_at


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
            made = Message(
                id=f"{thread}:{position}",
                thread=thread,
                author=author,
                text=text,
                at=synthetic_at(position),
                step=step,
                files=files,
            )
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
        result = Returns(returns=(Return(id=call, name=tool, content=text),))
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
    size, pages = 0, None
    if isinstance(url, str) and url.startswith("data:"):
        data, url = url, None
    if isinstance(data, str):
        header, _, payload = data.rpartition(",")
        if header.startswith("data:"):
            mime = header.removeprefix("data:").split(";", 1)[0] or mime
        size = len(payload) * 3 // 4 - payload.count("=")  # base64's decoded length
        if mime == "application/pdf":
            with contextlib.suppress(binascii.Error):  # not base64: pages guessed from size
                pages = pdf_pages(base64.b64decode(payload))
    audio = inner.get("format")
    if kind == "input_audio" and isinstance(audio, str):
        mime, name = f"audio/{audio}", f"audio-{k}.{audio}"
    if not isinstance(name, str) or not name:
        tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] if isinstance(url, str) else ""
        name = tail if tail and ":" not in tail else f"{kind}-{k}"
    if isinstance(url, str) and mime == "image/*":
        mime = mimetypes.guess_type(name)[0] or mime
    url = url if isinstance(url, str) else None
    return File(name=name, mime=mime, size=size, url=url, pages=pages)
