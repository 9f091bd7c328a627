"""A ChatGPT data export (`conversations.json`) read into messages, one thread per conversation.

The rules, so that a real export can be ingested as it is:

- the thread is the conversation's id, its title the thread's title; a message's id is
  `{thread}:{node id}`;
- a conversation's messages form a tree (every edit or regeneration is a branch): the branch
  that was shown is followed, from `current_node` up through the `parent` links (without a
  `current_node`, from the leaf written last);
- a zipped export can be read as it was downloaded;
- system messages, hidden ones (custom instructions, memory), the model's reasoning and empty
  messages are left out;
- `user` and `assistant` are the authors; the assistant's message to a tool (`recipient`) is its
  step calling that tool, and the tool's answer its step returning the result (the JSON the
  pydantic-ai hook writes), the call's id being the node id of the message that made it; a
  call whose text is not a JSON object (a python program, a browser command such as
  `search("...")`) keeps it as text, its arguments `{"code": text}`;
- `create_time` (epoch seconds) becomes an aware UTC time; a message without one takes the time
  of the message before it (or of the conversation);
- an answer's citation marks (`【11†source】`, or the newer `content_references`) become the
  links they stand for (`[title](url)`);
- attachments and images are files (an image weighs as one, by its `image/` type); a file an
  asset pointer names keeps it as its `url` (`file-service://file-ab`), and its size: an
  upload, an image DALL-E generated, an image a python run made.

Each record that cannot be read is reported at its JSON path, down to the part at fault
(`$[3].mapping.n2.message.content.parts[1]`): a part that is neither text nor a pointer, a
content with nothing to read, an unknown role, a tool's answer that no call asked for. The
rest of the file is still read, so one run shows every problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..agent.steps import Call, Calls, Return, Returns, encode
from ..contract import File, Message
from ..errors import InputError
from ._records import ASSISTANT, SKIPPED_ROLES, USER, Below, Reader, path_of

HIDDEN_CONTENT = ("user_editable_context", "model_editable_context")
"""Custom instructions and memory: given to the model, never shown in the conversation."""
REASONING = ("thoughts", "reasoning_recap")
"""The model's reasoning: not recorded, as the pydantic-ai hook records none."""
ROLES = (USER, ASSISTANT, "tool", *SKIPPED_ROLES)
"""The authors a conversation's messages have; any other is reported."""


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
    title = conversation.get("title")
    if isinstance(title, str) and title.strip():
        reader.title(thread, " ".join(title.split()))
    elif title is not None and not isinstance(title, str):
        reader.bad(path_of(*keys, "title"), f"title must be a string, got {title!r:.80}")
    try:
        last = _epoch(conversation.get("create_time"))
    except InputError as exc:
        reader.bad(path_of(*keys, "create_time"), str(exc))
        return
    calls: dict[str, str] = {}
    for node_id, message in branch:
        if message is None:
            continue
        place: tuple[int | str, ...] = (*keys, "mapping", node_id, "message")
        try:
            made = _message(message, thread, node_id, last, calls)
        except Below as exc:
            reader.bad(path_of(*place, *exc.keys), str(exc))
            continue
        except InputError as exc:
            reader.bad(path_of(*place), str(exc))
            continue
        if made is not None:
            last = made.at
            reader.add(path_of(*place), made)


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


def _time_of(node: Mapping[str, object]) -> int | float:
    """A node's `create_time` to compare (as it is: 10**400 is no float), 0 for none."""
    message = node.get("message")
    at = message.get("create_time") if isinstance(message, Mapping) else None
    return at if isinstance(at, int | float) and not isinstance(at, bool) else 0


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
    if content is None:
        raise Below(("content",), "a message with no content")
    if not isinstance(content, Mapping):
        raise InputError(f"content must be an object, got {content!r:.80}", field="content")
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be an object, got {metadata!r:.80}", field="metadata")
    role, kind = author["role"], content.get("content_type")
    if role not in ROLES:
        raise Below(("author", "role"), f"unknown role {role!r} (known: {', '.join(ROLES)})")
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
        made = Calls(calls=(Call(id=node_id, name=recipient, args=_arguments(text, kind)),))
        role, step, text = ASSISTANT, True, encode(made)
    elif role == "assistant":
        text = _linked(text, metadata)
    elif role == "tool":
        tool = name if isinstance(name, str) and name else "tool"
        call = _call_of(tool, calls)
        if call is None:
            raise Below(
                ("author", "name"),
                f"a result of {tool!r}, which no earlier message of the shown branch calls",
            )
        result = Returns(returns=(Return(id=call, name=tool, content=text),))
        role, step, text = ASSISTANT, True, encode(result)
    return Message(
        id=f"{thread}:{node_id}",
        thread=thread,
        author=role,
        text=text,
        at=at,
        step=step,
        files=files,
    )


def _linked(text: str, metadata: Mapping[str, object]) -> str:
    """An answer with its citation marks replaced by the links they stand for: a mark such as
    `【11†source】` (`citations`, by its place in the text) by `[title](url)`, a newer mark
    (`content_references`, by its `matched_text`) by the text ChatGPT shows for it (`alt`)."""
    cites = metadata.get("citations")
    spans: list[tuple[int, int, str]] = []
    for cite in cites if isinstance(cites, list) else ():
        about = cite.get("metadata") if isinstance(cite, Mapping) else None
        if not isinstance(cite, Mapping) or not isinstance(about, Mapping):
            continue
        start, end, url, title = (
            cite.get("start_ix"),
            cite.get("end_ix"),
            about.get("url"),
            about.get("title"),
        )
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(url, str)):
            continue
        if 0 <= start < end <= len(text) and text[start] == "【":  # the mark, not moved text
            name = title if isinstance(title, str) and title else url
            spans.append((start, end, f"[{name}]({url})"))
    for start, end, link in sorted(spans, reverse=True):
        text = text[:start] + link + text[end:]
    references = metadata.get("content_references")
    for ref in references if isinstance(references, list) else ():
        mark = ref.get("matched_text") if isinstance(ref, Mapping) else None
        shown = ref.get("alt") if isinstance(ref, Mapping) else None
        if isinstance(mark, str) and mark and isinstance(shown, str):
            text = text.replace(mark, shown)
    return text


def _call_of(tool: str, calls: Mapping[str, str]) -> str | None:
    """The call a tool's answer returns to: the last made to it by name, or, as ChatGPT names
    some tools shorter in the call than in the answer (`web`, `web.run`), by its namespace."""
    if tool in calls:
        return calls[tool]
    space = tool.split(".", 1)[0]
    found = [call for name, call in calls.items() if name.split(".", 1)[0] == space]
    return found[-1] if found else None


def _arguments(text: str, kind: object) -> str | dict[str, Any]:
    """A call's arguments: a JSON object as given (DALL-E's prompt); anything else, such as a
    python program or a browser command (`search("...")`), kept as text in an object, so that
    a model is sent it as it was written, not as JSON it cannot read."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return text
    return {"code": text} if kind == "code" else {"text": text}


def _content(
    content: Mapping[str, object], metadata: Mapping[str, object]
) -> tuple[str, tuple[File, ...]]:
    """The text of a message's content, whatever its type, and the files it names."""
    texts: list[str] = []
    pointers: list[Mapping[str, object]] = []
    parts = content.get("parts")
    kind = content.get("content_type")
    if "parts" in content:
        if not isinstance(parts, list):
            raise Below(("content", "parts"), f"parts must be a list, got {parts!r:.80}")
        for k, part in enumerate(parts):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("asset_pointer"), str):
                pointers.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and isinstance(part.get("audio_asset_pointer"), Mapping):
                pointers.append(part["audio_asset_pointer"])  # a voice message's recording
            else:
                raise Below(
                    ("content", "parts", k),
                    f"not a string, nor a part with text or an asset pointer: {part!r:.80}",
                )
    elif kind == "tether_quote":
        texts.extend(str(content[k]) for k in ("title", "url", "text") if content.get(k))
    else:  # code, execution_output, tether_browsing_display, system_error, ...
        found = next((content[k] for k in ("text", "result", "summary") if k in content), None)
        if not isinstance(found, str):
            raise Below(
                ("content",), f"content of type {kind!r} holds no text, result or parts to read"
            )
        texts.append(found)
    files, named = _attachments(metadata.get("attachments"))
    for part in pointers:
        files.append(_pointed(part, named))
    files.extend(named.values())
    files.extend(_outputs(metadata))
    return "\n".join(texts), tuple(files)


def _pointed(part: Mapping[str, object], named: dict[str, File]) -> File:
    """The file an asset pointer points at, keeping the pointer: the upload it names, with
    its name and type, or a file of its own (an image DALL-E or python made)."""
    pointer = str(part["asset_pointer"])
    key = pointer.rsplit("/", 1)[-1]
    upload = named.pop(key, None)
    size = _size(part.get("size_bytes"))
    if upload is not None:
        return File(name=upload.name, mime=upload.mime, size=upload.size or size, url=pointer)
    kind = str(part.get("content_type", "")).split("_", 1)[0]
    mime = f"{kind}/*" if kind in ("image", "audio") else None
    return File(name=key, mime=mime, size=size, url=pointer)


def _attachments(value: object) -> tuple[list[File], dict[str, File]]:
    """The uploaded files a message names: those without an id, and by id those with one (an
    image part points at its upload by id, and takes its name)."""
    loose: list[File] = []
    named: dict[str, File] = {}
    for attachment in value if isinstance(value, list) else ():
        if not isinstance(attachment, Mapping) or not isinstance(attachment.get("name"), str):
            continue
        mime = attachment.get("mime_type") or attachment.get("mimeType")
        made = File(
            name=attachment["name"],
            mime=mime if isinstance(mime, str) else None,
            size=_size(attachment.get("size")),
        )
        id = attachment.get("id")
        if isinstance(id, str):
            named[id] = made
        else:
            loose.append(made)
    return loose, named


def _outputs(metadata: Mapping[str, object]) -> list[File]:
    """The images a python run made (`aggregate_result.messages`), with their pointers."""
    result = metadata.get("aggregate_result")
    messages = result.get("messages") if isinstance(result, Mapping) else None
    files: list[File] = []
    for made in messages if isinstance(messages, list) else ():
        url = made.get("image_url") if isinstance(made, Mapping) else None
        if isinstance(url, str) and url:
            files.append(File(name=url.rsplit("/", 1)[-1], mime="image/*", url=url))
    return files


def _size(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _epoch(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"create_time must be epoch seconds, got {value!r}", field="at")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise InputError(f"create_time {value!r:.40} is not a time", field="at") from None
