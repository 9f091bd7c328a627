"""Rows to data and back, by column name, for every store."""

from __future__ import annotations

import hashlib
import json
import uuid
import zlib
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from ..contract import (
    About,
    Ask,
    Entry,
    File,
    Message,
    Outline,
    StepOutline,
    Stored,
    Summary,
    TailItem,
    entries_json,
    format_at,
)
from ..errors import ConflictError
from ..lines import line_of

MESSAGE_COLUMNS = 'id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx'
"""A message row's columns, and a call's: for writing rows outside a store (`insert`)."""
CALL_COLUMNS = (
    "thread, key, n, model, level, idx, prompts, answers, line, outcome, "
    "input_tokens, output_tokens, agent"
)


class Row(Protocol):
    """A row read by column name: `sqlite3.Row`, asyncpg's `Record`, or a dict."""

    def __getitem__(self, column: str, /) -> Any: ...


Params = dict[str, Any]
"""A statement's named parameters (see `queries`)."""


def insert(table: str, columns: str) -> str:
    """`INSERT INTO table (columns) VALUES (?, ...)`, for writing rows outside a store (tests,
    benchmarks) in SQLite's style."""
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * (columns.count(',') + 1))})"


def about_from_row(row: Row) -> About:
    return About(
        thread=row["thread"], title=row["title"], settings=row["settings"], space=row["space"]
    )


def parse(at: str | None) -> datetime | None:
    return None if at is None else datetime.fromisoformat(at)


def when(at: datetime | None) -> str | None:
    return None if at is None else format_at(at)


def message_params(message: Message, weight: int, native: str | None) -> Params:
    """The parameters of `insert_message`: the store gives the seq and the indexes."""
    m = message
    return {
        "id": m.id,
        "thread": m.thread,
        "step": m.step,
        "author": m.author,
        "to": m.to,
        "text": m.text,
        "at": format_at(m.at),
        "files": m.files_json(),
        "weight": weight,
        "native": native,
    }


def check_redelivery(message: Message, stored: Stored) -> None:
    """A known id is fine with the same content (ignored); other content is a ConflictError."""
    if stored.message.content != message.content:
        raise ConflictError(
            f"message id {message.id!r} is already stored with other content "
            f"(thread {stored.message.thread!r}); the stored message is kept",
            field="id",
        )


def stored_from_row(row: Row) -> Stored:
    message = Message(
        id=row["id"],
        thread=row["thread"],
        author=_legacy(row["author"]),
        to=_legacy(row["to"]),
        text=_legacy(row["text"]),
        at=datetime.fromisoformat(row["at"]),
        step=bool(row["step"]),
        files=_files(row["files"]),
    )
    return Stored(
        message=message,
        seq=row["seq"],
        index=row["idx"],
        weight=row["weight"],
        step_index=row["sidx"],
    )


def message_line(row: Row, thread: str) -> str:
    """A message's line (`line_of`) from the columns of it that `search_details` reads."""
    message = Message(
        id=row["message"],
        thread=thread,
        author=_legacy(row["author"]),
        to=_legacy(row["addressee"]),
        text=_legacy(row["text"]),
        at=datetime.fromisoformat(row["at"]),
        files=_files(row["files"]),
    )
    return line_of(message)


def _files(text: str) -> tuple[File, ...]:
    return tuple(File(**{**f, "name": _legacy(f["name"])}) for f in json.loads(text))


def _legacy(text: str) -> str:
    """A NUL that SQLite stored before messages holding one were refused, read as U+FFFD."""
    return text.replace("\x00", "\ufffd")


def summary_row(node: Summary) -> Params:
    n = node
    return {
        "thread": n.thread,
        "level": n.level,
        "idx": n.index,
        "text": n.text,
        "bytes": n.bytes,
        "message": n.message,
        "at": format_at(n.at),
        "agent": n.agent,
        "fallback": int(n.fallback),
    }


def summary_from_row(row: Row) -> Summary:
    return Summary(
        thread=row["thread"],
        agent=row["agent"],
        level=row["level"],
        index=row["idx"],
        text=row["text"],
        bytes=row["bytes"],
        message=row["message"],
        at=datetime.fromisoformat(row["at"]),
        fallback=bool(row["fallback"]),
    )


def node_keys(keys: Sequence[tuple[int, int]]) -> Params:
    """Nodes' `(level, index)` keys as both dialects bind them: a JSON list for SQLite
    (`keys`), two arrays for PostgreSQL (`levels`, `indexes`)."""
    return {
        "keys": [list(key) for key in keys],
        "levels": [level for level, _ in keys],
        "indexes": [index for _, index in keys],
    }


def new_outline_row(thread: str) -> Params:
    """The row of a thread's first message: nothing processed yet, a fresh epoch."""
    return {
        "thread": thread,
        "epoch": uuid.uuid4().hex,
        "lines": "[]",
        "bytes": 0,
        "boundary": 0,
        "since": None,
        "cut_at": None,
        "gone": None,
        "tail_start": 0,
        "tokens": 0,
        "draining": False,
        "position": -1,
        "version": 0,
        "floor": 0,
        "steps": "{}",
    }


def entries(value: Sequence[Sequence[Any]]) -> list[Entry]:
    return [Entry(lv, ix, by, datetime.fromisoformat(at)) for lv, ix, by, at in value]


def lines_json(lines: Sequence[Entry]) -> str:
    return json.dumps(entries_json(lines))


def steps_json(steps: Mapping[str, StepOutline]) -> str:
    """Each agent's step outline as the `steps` column holds it, agents in code-point order."""
    return json.dumps({a: o.to_json() for a, o in sorted(steps.items())}, ensure_ascii=False)


def steps_from_json(text: str) -> dict[str, StepOutline]:
    return {
        agent: StepOutline(
            lines=entries(o["lines"]),
            bytes=o["bytes"],
            boundary=o["boundary"],
            draining=o["draining"],
        )
        for agent, o in json.loads(text).items()
    }


def outline_from_row(row: Row) -> Outline:
    """An outline from its row, whose `tail` is the JSON `[[id, weight, at, step, seq], ...]` of
    its tail's messages (sorted by seq here, whatever order the database gave them in)."""
    tail = sorted(json.loads(row["tail"]), key=lambda item: item[4])
    return Outline(
        thread=row["thread"],
        epoch=row["epoch"],
        version=row["version"],
        floor=row["floor"],
        steps=steps_from_json(row["steps"]),
        lines=entries(json.loads(row["lines"])),
        bytes=row["bytes"],
        boundary=row["boundary"],
        since=parse(row["since"]),
        cut_at=parse(row["cut_at"]),
        gone=parse(row["gone"]),
        tail=deque(
            TailItem(id=id, weight=weight, at=datetime.fromisoformat(at), step=bool(step), seq=seq)
            for id, weight, at, step, seq in tail
        ),
        tokens=row["tokens"],
        draining=bool(row["draining"]),
        position=row["position"],
    )


def outline_update(after: Outline, *, lines_changed: bool) -> Params:
    """The parameters of a commit's `update_outline`: lines and steps null when unchanged, and
    then not serialized (most commits only move the tail)."""
    return _outline_values(after, lines=lines_changed)


def _outline_values(o: Outline, *, lines: bool = True) -> Params:
    """What a commit or a load writes of an outline (with `lines`, its lines and steps)."""
    return {
        "bytes": o.bytes,
        "boundary": o.boundary,
        "since": when(o.since),
        "cut_at": when(o.cut_at),
        "gone": when(o.gone),
        "tail_start": o.tail_start,
        "tokens": o.tokens,
        "draining": o.draining,
        "position": o.position,
        "floor": o.floor,
        "lines": lines_json(o.lines) if lines else None,
        "steps": steps_json(o.steps) if lines else None,
    }


def call_key(model: str, prompts: Sequence[str]) -> str:
    """The pin of a conversation: its model (name, settings, instructions) and every prompt."""
    return hashlib.sha256(json.dumps([model, list(prompts)]).encode("utf-8")).hexdigest()


def model_digest(model: str) -> str:
    """The key a model key is kept once under (`call_model`)."""
    return hashlib.blake2b(model.encode("utf-8"), digest_size=16).hexdigest()


def pack(ask: Ask) -> bytes:
    """A call's prompts, answers and line as one compressed JSON array (its `packed` column)."""
    whole = [list(ask.prompts), list(ask.answers), ask.line]
    return zlib.compress(json.dumps(whole, ensure_ascii=False).encode("utf-8"))


def call_row(ask: Ask, model: str, n: int) -> Params:
    """The parameters of `insert_call_model` and `insert_call`."""
    return {
        "thread": ask.thread,
        "key": call_key(model, ask.prompts),
        "n": n,
        "model": model,
        "model_key": model_digest(model),
        "level": ask.level,
        "idx": ask.index,
        "packed": pack(ask),
        "outcome": ask.outcome,
        "input_tokens": ask.input_tokens,
        "output_tokens": ask.output_tokens,
        "agent": ask.agent,
    }


def ask_from_row(row: Row) -> Ask:
    """A call from its row: packed, or whole as the rows written before `call_packed` are."""
    packed = row["packed"]
    prompts, answers, line = (
        json.loads(zlib.decompress(packed))
        if packed is not None
        else (json.loads(row["prompts"]), json.loads(row["answers"]), row["line"])
    )
    return Ask(
        thread=row["thread"],
        agent=row["agent"],
        level=row["level"],
        index=row["idx"],
        prompts=tuple(prompts),
        answers=tuple(answers),
        line=line,
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        outcome=row["outcome"],
    )


def outline_row(outline: Outline) -> Params:
    """The row of an outline loaded from elsewhere: a fresh epoch and version in this store."""
    return {
        **_outline_values(outline),
        "thread": outline.thread,
        "epoch": uuid.uuid4().hex,
        "version": 0,
    }


def loaded_message_row(stored: Stored, native: str | None = None) -> Params:
    """The row of a message loaded from elsewhere, in its place: its seq, index and weight, and
    its provider's form (`native`) when it has one."""
    m = stored.message
    return {
        "id": m.id,
        "thread": m.thread,
        "seq": stored.seq,
        "idx": stored.index,
        "author": m.author,
        "to": m.to,
        "text": m.text,
        "at": format_at(m.at),
        "step": m.step,
        "files": m.files_json(),
        "weight": stored.weight,
        "sidx": stored.step_index,
        "native": native,
    }
