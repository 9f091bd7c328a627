"""Sizes, a message as one line, labels and node ids, and the ways a text is shortened."""

from __future__ import annotations

from .contract import Message

INPUT_LIMIT = 64_000
"""An `<input>` over this many bytes keeps only its head and its end."""
INPUT_SIDE = 32_000


def size(text: str) -> int:
    """The size of `text` in UTF-8 bytes."""
    return len(text.encode("utf-8"))


def one_line(text: str) -> str:
    """`text` with every `\\r\\n`, `\\n` and `\\r` replaced by one space."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def speaker(m: Message) -> str:
    """Who speaks in a message's header: `Ana → north`, or `Ana` when it is to nobody."""
    return f"{m.author} → {m.to}" if m.to else m.author


def line_of(m: Message) -> str:
    """A message as one line: `Ana → north: text [file.pdf]`, its newlines as spaces."""
    files = "".join(f" [{f.name}]" for f in m.files)
    return f"{speaker(m)}: {one_line(m.text)}{files}"


def render(m: Message, text: str | None = None) -> str:
    """A message as an agent reads it (newlines kept, no file names): what is weighed; with
    `text` in place of its own (its head, when it is too long for a prompt)."""
    return f"{speaker(m)}: {m.text if text is None else text}"


def label(level: int, index: int, *, agent: str = "") -> str:
    """A node's label, `"{first message}+{count}"`; in a step tree `"s{first step}+{count}"`."""
    span = 2**level
    return f"{'s' if agent else ''}{index * span}+{span}"


def node_id(thread: str, level: int, index: int, *, agent: str = "") -> str:
    """A node's id, `"{thread}:{level}:{index}"`; `"{thread}:{agent}:s{level}:{index}"` for a
    node of `agent`'s step tree."""
    if agent:
        return f"{thread}:{agent}:s{level}:{index}"
    return f"{thread}:{level}:{index}"


def normalize(answer: str) -> str:
    """A model's answer with whitespace runs joined into single spaces, stripped."""
    return " ".join(answer.split())


def prefix(text: str, limit: int) -> str:
    """The longest prefix of whole characters whose size is at most `limit` bytes."""
    return text.encode("utf-8")[: max(limit, 0)].decode("utf-8", errors="ignore")


def suffix(text: str, limit: int) -> str:
    """The longest suffix of whole characters whose size is at most `limit` bytes."""
    encoded = text.encode("utf-8")
    return encoded[len(encoded) - max(limit, 0) :].decode("utf-8", errors="ignore")


def cut(text: str, limit: int) -> str:
    """The last resort: a prefix that fits `limit - 3` bytes, stripped, then `…`."""
    return prefix(text, limit - 3).rstrip() + "…"


def bound_input(text: str) -> str:
    """An `<input>` as placed in a task: over 64,000 bytes, its head and end around a note."""
    total = size(text)
    if total <= INPUT_LIMIT:
        return text
    head, end = prefix(text, INPUT_SIDE), suffix(text, INPUT_SIDE)
    dropped = total - size(head) - size(end)
    return f"{head} […{dropped} bytes left out…] {end}"
