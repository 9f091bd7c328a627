"""Other apps' conversation files: a ChatGPT data export and a pydantic-ai message history.

Both are turned into the project's messages by the rules below, so that a real export can be
ingested as it is. Each record that cannot be read is reported at its JSON path; the rest of the
file is still read, so one run shows every problem.

ChatGPT (`conversations.json`, a list of conversations, or one conversation object):
    - the thread is the conversation's id; a message's id is `{thread}:{node id}`;
    - a conversation's messages form a tree (every edit or regeneration is a branch); the branch
      shown in ChatGPT is followed, from `current_node` up through the `parent` links;
    - system messages, hidden ones (custom instructions, memory) and empty ones are left out;
    - `user` and `assistant` are the authors; a tool's message is a step by the tool's name, and
      so are the assistant's messages to a tool (`to` the tool) and its reasoning;
    - `create_time` (epoch seconds) becomes an aware UTC time; a message without one takes the
      time of the message before it (or of the conversation);
    - attachments and images are files (images weigh as images, by their `image/` type).

pydantic-ai (`ModelMessagesTypeAdapter` JSON):
    - one thread, named by the file or `--thread`; part `j` of message `i` is `{thread}:{i}.{j}`;
    - user prompts are `user`'s messages and model text is `assistant`'s; tool calls, tool
      returns, retries and thinking are steps; system prompts are left out;
    - a part's time is its own `timestamp`, else its message's, else the later of the time
      before it and a synthetic time (`SYNTHETIC_START` plus one second per message), so the
      same file always gives the same times; a time written without an offset is read as UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pydantic
from pydantic_ai import messages as ai

from .contract import File, Message
from .errors import InputError
from .ingest import SKIPPED_ROLES, Reader, path_of, synthetic_at
from .ingest import SYNTHETIC_START as START

HIDDEN_CONTENT = ("user_editable_context", "model_editable_context")
"""Custom instructions and memory: given to the model, never shown in the conversation."""
PRIVATE_CONTENT = ("thoughts", "reasoning_recap")
"""The model's reasoning: its own, like a tool call, so a step."""


def chatgpt(value: object, reader: Reader) -> None:
    """Read a ChatGPT export: one thread per conversation, the branch that was shown."""
    if isinstance(value, Mapping):
        _conversation(value, (), reader)
    elif isinstance(value, list):
        for i, conversation in enumerate(value):
            _conversation(conversation, (i,), reader)
    else:
        reader.bad("$", f"a ChatGPT export is a list of conversations, got {type(value).__name__}")


def _conversation(conversation: object, keys: tuple[int, ...], reader: Reader) -> None:
    where = path_of(*keys)
    if not isinstance(conversation, Mapping):
        reader.bad(where, f"a conversation must be an object, got {conversation!r:.80}")
        return
    thread = conversation.get("conversation_id") or conversation.get("id")
    mapping, current = conversation.get("mapping"), conversation.get("current_node")
    if not isinstance(thread, str) or not thread:
        reader.bad(where, f"a conversation needs a string id, got {thread!r}")
        return
    if not isinstance(mapping, Mapping):
        reader.bad(path_of(*keys, "mapping"), f"mapping must be an object, got {mapping!r:.80}")
        return
    if not isinstance(current, str) or current not in mapping:
        reader.bad(path_of(*keys, "current_node"), f"{current!r} is not a node of the mapping")
        return
    branch = _branch(mapping, current, keys, reader)
    if branch is None:
        return
    try:
        last = _epoch(conversation.get("create_time"))
    except InputError as exc:
        reader.bad(path_of(*keys, "create_time"), str(exc))
        return
    for node_id, message in branch:
        where = path_of(*keys, "mapping", node_id, "message")
        if message is None:
            continue
        try:
            made = _chatgpt_message(message, thread, node_id, last)
        except InputError as exc:
            reader.bad(where, str(exc))
            continue
        if made is not None:
            last = made.at
            reader.add(where, made)


def _branch(
    mapping: Mapping[str, object], current: str, keys: tuple[int, ...], reader: Reader
) -> list[tuple[str, object]] | None:
    """The shown branch's `(node id, message)` pairs, root first; None (reported) if broken."""
    branch: list[tuple[str, object]] = []
    visited: set[object] = set()
    node_id: str | None = current
    while node_id is not None:
        node = mapping[node_id]
        if not isinstance(node, Mapping):
            reader.bad(
                path_of(*keys, "mapping", node_id), f"a node must be an object, got {node!r:.80}"
            )
            return None
        branch.append((node_id, node.get("message")))
        visited.add(node_id)
        parent = node.get("parent")
        if parent is not None and (not isinstance(parent, str) or parent not in mapping):
            reader.bad(
                path_of(*keys, "mapping", node_id, "parent"),
                f"{parent!r} is not a node of the mapping",
            )
            return None
        if parent in visited:
            reader.bad(
                path_of(*keys, "mapping", node_id, "parent"),
                "the parent links go round in a circle",
            )
            return None
        node_id = parent
    branch.reverse()
    return branch


def _chatgpt_message(
    message: object, thread: str, node_id: str, last: datetime | None
) -> Message | None:
    """One node's message, or None for one that is not shown (system, hidden, empty)."""
    if not isinstance(message, Mapping):
        raise InputError(f"a message must be an object or null, got {message!r:.80}")
    author, content = message.get("author"), message.get("content")
    metadata = message.get("metadata") or {}
    if not isinstance(author, Mapping) or not isinstance(author.get("role"), str):
        raise InputError(
            f"author must be an object with a role, got {author!r:.80}", field="author"
        )
    if not isinstance(content, Mapping):
        raise InputError(f"content must be an object, got {content!r:.80}", field="content")
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be an object, got {metadata!r:.80}", field="metadata")
    role, kind = author["role"], content.get("content_type")
    if (
        role in SKIPPED_ROLES
        or metadata.get("is_visually_hidden_from_conversation")
        or kind in HIDDEN_CONTENT
    ):
        return None
    text, files = _chatgpt_content(content, metadata)
    if not text.strip() and not files:
        return None
    at = _epoch(message.get("create_time")) or last
    if at is None:
        raise InputError("create_time is missing, and so is the conversation's", field="at")
    recipient = message.get("recipient")
    to = recipient if isinstance(recipient, str) and recipient not in ("", "all") else ""
    name = author.get("name")
    step = role == "tool" or (role == "assistant" and bool(to)) or kind in PRIVATE_CONTENT
    return Message(
        id=f"{thread}:{node_id}",
        thread=thread,
        author=(name if isinstance(name, str) and name else "tool") if role == "tool" else role,
        to=to if role == "assistant" else "",
        text=text,
        at=at,
        step=step,
        files=files,
    )


def _chatgpt_content(
    content: Mapping[str, object], metadata: Mapping[str, object]
) -> tuple[str, tuple[File, ...]]:
    texts: list[str] = []
    pointers: list[str] = []
    kind = content.get("content_type")
    parts = content.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("asset_pointer"), str):
                pointers.append(part["asset_pointer"])
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    elif kind == "thoughts" and isinstance(thoughts := content.get("thoughts"), list):
        for thought in thoughts:
            if isinstance(thought, Mapping):
                texts.extend(str(thought[k]) for k in ("summary", "content") if thought.get(k))
    elif kind == "tether_quote":
        texts.extend(str(content[k]) for k in ("title", "url", "text") if content.get(k))
    else:
        for key in ("text", "result", "content", "summary"):
            if isinstance(content.get(key), str):
                texts.append(str(content[key]))
                break
    files, named = _attachments(metadata.get("attachments"))
    for pointer in pointers:
        key = pointer.rsplit("/", 1)[-1]
        if key not in named:
            files.append(File(name=key, mime="image/*"))
    return "\n".join(texts), tuple(files)


def _attachments(value: object) -> tuple[list[File], set[str]]:
    """The uploaded files a message names, and their ids (an image part points at one)."""
    files: list[File] = []
    ids: set[str] = set()
    for attachment in value if isinstance(value, list) else ():
        if not isinstance(attachment, Mapping) or not isinstance(attachment.get("name"), str):
            continue
        mime = attachment.get("mime_type") or attachment.get("mimeType")
        size = attachment.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            size = 0
        files.append(
            File(name=attachment["name"], mime=mime if isinstance(mime, str) else None, size=size)
        )
        ids.add(str(attachment.get("id")))
    return files, ids


def _epoch(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"create_time must be epoch seconds, got {value!r}", field="at")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise InputError(f"create_time {value!r} is not a time", field="at") from None


def pydantic_ai(value: object, thread: str, reader: Reader) -> None:
    """Read a pydantic-ai message history: one thread, one message per part that is shown."""
    if not isinstance(value, list):
        reader.bad("$", f"a pydantic-ai history is a list of messages, got {type(value).__name__}")
        return
    last: datetime | None = None
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
        raw_parts = raw["parts"]
        for j, part in enumerate(message.parts):
            at = _given(raw_parts[j], getattr(part, "timestamp", None))
            at = at or _given(raw, message.timestamp) or max(last or START, synthetic_at(i))
            made = _part(part, thread=thread, id=f"{thread}:{i}.{j}", at=at)
            if made is not None:
                last = at
                reader.add(path_of(i, "parts", j), made)


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


def _part(part: object, *, thread: str, id: str, at: datetime) -> Message | None:
    author, to, step, text = "assistant", "", False, ""
    files: tuple[File, ...] = ()
    if isinstance(part, ai.UserPromptPart):
        author = "user"
        text, files = _user_content(part.content)
    elif isinstance(part, ai.TextPart):
        text = part.content
    elif isinstance(part, ai.BaseToolCallPart):
        to, step, text = part.tool_name, True, part.args_as_json_str()
    elif isinstance(part, ai.BaseToolReturnPart):
        author, step, text = part.tool_name, True, part.model_response_str()
    elif isinstance(part, ai.RetryFeedbackPart):
        author, step, text = "retry", True, part.model_response()
    elif isinstance(part, ai.ThinkingPart):
        step, text = True, part.content
    elif isinstance(part, ai.FilePart):
        files = (_file(part.content),)
    else:
        return None  # system prompts, instructions, compaction and other bookkeeping
    if not text.strip() and not files:
        return None
    return Message(
        id=id, thread=thread, author=author, to=to, text=text, at=at, step=step, files=files
    )


def _user_content(content: str | Sequence[ai.UserContent]) -> tuple[str, tuple[File, ...]]:
    if isinstance(content, str):
        return content, ()
    texts: list[str] = []
    files: list[File] = []
    for item in content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, ai.TextContent):
            texts.append(item.content)
        elif isinstance(item, ai.BinaryContent | ai.FileUrl | ai.UploadedFile):
            files.append(_file(item))
    return "\n".join(texts), tuple(files)


def _file(item: ai.BinaryContent | ai.FileUrl | ai.UploadedFile) -> File:
    size = len(item.data) if isinstance(item, ai.BinaryContent) else 0
    return File(name=item.identifier, mime=item.media_type, size=size)
