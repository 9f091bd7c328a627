"""A ChatGPT data export (`conversations.json`) read into messages, one thread per conversation.

The rules, so that a real export can be ingested as it is:

- the thread is the conversation's id; a message's id is `{thread}:{node id}`;
- a conversation's messages form a tree (every edit or regeneration is a branch): the branch
  that was shown is followed, from `current_node` up through the `parent` links (without a
  `current_node`, from the leaf written last);
- a zipped export can be read as it was downloaded;
- system messages, hidden ones (custom instructions, memory), the model's reasoning and empty
  messages are left out;
- `user` and `assistant` are the authors; the assistant's message to a tool (`recipient`) is its
  step calling that tool, and the tool's answer its step returning the result (the JSON the
  pydantic-ai hook writes), the call's id being the node id of the message that made it;
- `create_time` (epoch seconds) becomes an aware UTC time; a message without one takes the time
  of the message before it (or of the conversation);
- attachments and images are files (an image weighs as one, by its `image/` type).

Each record that cannot be read is reported at its JSON path; the rest of the file is still
read, so one run shows every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from .contract import File, Message
from .errors import InputError
from .formats import one_result
from .ingest import ASSISTANT, SKIPPED_ROLES, Reader, path_of
from .steps import Call, Calls, Return, encode

HIDDEN_CONTENT = ("user_editable_context", "model_editable_context")
"""Custom instructions and memory: given to the model, never shown in the conversation."""
REASONING = ("thoughts", "reasoning_recap")
"""The model's reasoning: not recorded, as the pydantic-ai hook records none."""


def chatgpt(value: object, reader: Reader) -> None:
    """Read a ChatGPT export: a list of conversations, or one conversation object."""
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
    if current is None:
        current = _newest_leaf(mapping)
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
    calls: dict[str, str] = {}
    for node_id, message in branch:
        if message is None:
            continue
        try:
            made = _message(message, thread, node_id, last, calls)
        except InputError as exc:
            reader.bad(path_of(*keys, "mapping", node_id, "message"), str(exc))
            continue
        if made is not None:
            last = made.at
            reader.add(path_of(*keys, "mapping", node_id, "message"), made)


def _branch(
    mapping: Mapping[str, object], current: str, keys: tuple[int, ...], reader: Reader
) -> list[tuple[str, object]] | None:
    """The shown branch's `(node id, message)` pairs, root first; None (reported) if broken."""
    branch: list[tuple[str, object]] = []
    visited: set[object] = set()
    node_id: str | None = current
    while node_id is not None:
        node = mapping[node_id]
        where = path_of(*keys, "mapping", node_id)
        if not isinstance(node, Mapping):
            reader.bad(where, f"a node must be an object, got {node!r:.80}")
            return None
        branch.append((node_id, node.get("message")))
        visited.add(node_id)
        parent = node.get("parent")
        if parent is not None and (not isinstance(parent, str) or parent not in mapping):
            reader.bad(f"{where}.parent", f"{parent!r} is not a node of the mapping")
            return None
        if parent in visited:
            reader.bad(f"{where}.parent", "the parent links go round in a circle")
            return None
        node_id = parent
    branch.reverse()
    return branch


def _newest_leaf(mapping: Mapping[str, object]) -> str | None:
    """Without a `current_node`, the branch shown is the one written last."""
    leaves = [
        (_time_of(node), key)
        for key, node in mapping.items()
        if isinstance(node, Mapping) and not node.get("children")
    ]
    return max(leaves)[1] if leaves else None


def _time_of(node: Mapping[str, object]) -> float:
    message = node.get("message")
    at = message.get("create_time") if isinstance(message, Mapping) else None
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0


def _message(
    message: object, thread: str, node_id: str, last: datetime | None, calls: dict[str, str]
) -> Message | None:
    """One node's message, or None for one that is not shown. `calls` maps a tool's name to
    the id of the last call made to it, so its answer returns to that call."""
    if not isinstance(message, Mapping):
        raise InputError(f"a message must be an object or null, got {message!r:.80}")
    author, content = message.get("author"), message.get("content")
    metadata = message.get("metadata") or {}
    if not isinstance(author, Mapping) or not isinstance(author.get("role"), str):
        raise InputError(f"author must be an object with a role, got {author!r:.80}", field="role")
    if not isinstance(content, Mapping):
        raise InputError(f"content must be an object, got {content!r:.80}", field="content")
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be an object, got {metadata!r:.80}", field="metadata")
    role, kind = author["role"], content.get("content_type")
    hidden = metadata.get("is_visually_hidden_from_conversation")
    if role in SKIPPED_ROLES or hidden or kind in HIDDEN_CONTENT or kind in REASONING:
        return None
    text, files = _content(content, metadata)
    if not text.strip() and not files:
        return None
    at = _epoch(message.get("create_time")) or last
    if at is None:
        raise InputError("create_time is missing, and so is the conversation's", field="at")
    recipient, name = message.get("recipient"), author.get("name")
    step = False
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("", "all"):
        calls[recipient] = node_id
        made = Calls(calls=(Call(id=node_id, name=recipient, args=text),))
        role, step, text = ASSISTANT, True, encode(made)
    elif role == "tool":
        tool = name if isinstance(name, str) and name else "tool"
        call = calls.get(tool, node_id)
        role, step, text = (
            ASSISTANT,
            True,
            encode(one_result(Return(id=call, name=tool, content=text))),
        )
    return Message(
        id=f"{thread}:{node_id}", thread=thread, author=role, text=text, at=at, step=step,
        files=files,
    )  # fmt: skip


def _content(
    content: Mapping[str, object], metadata: Mapping[str, object]
) -> tuple[str, tuple[File, ...]]:
    """The text of a message's content, whatever its type, and the files it names."""
    texts: list[str] = []
    pointers: list[str] = []
    parts = content.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("asset_pointer"), str):
                pointers.append(part["asset_pointer"])
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    elif content.get("content_type") == "tether_quote":
        texts.extend(str(content[k]) for k in ("title", "url", "text") if content.get(k))
    else:  # code, execution_output, tether_browsing_display, system_error, ...
        for key in ("text", "result", "summary"):
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
