"""Rows to data and back, shared by the SQLite and PostgreSQL stores; and the migrations."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from .. import terms
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

COLLECTIONS = Path(__file__).resolve().parent.parent / "collections"
MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_message", "message.sql"),
    ("0002_summary", "summary.sql"),
    ("0003_outline", "outline.sql"),
    ("0004_call", "call.sql"),
    ("0005_search", "search.sql"),
    ("0006_steps", "steps.sql"),
    ("0010_native", "native.sql"),
    ("0011_thread", "thread.sql"),
    ("0012_search2", "search2.sql"),
    ("0013_search_gin", "search_gin.sql"),
    ("0014_indexes", "indexes.sql"),
    ("0015_search_terms", "search_terms.sql"),
)
"""Named steps, applied in order, each in its own transaction and recorded in `migration`."""

MIGRATION_TABLE = (
    "CREATE TABLE IF NOT EXISTS migration (name TEXT PRIMARY KEY, applied TEXT NOT NULL)"
)

THREAD_COLUMNS = "thread, title, settings"
DESCRIBE = """
INSERT INTO thread (thread, title, settings) VALUES (?, ?, ?)
ON CONFLICT (thread) DO UPDATE
SET title = coalesce(excluded.title, thread.title),
    settings = coalesce(excluded.settings, thread.settings)
"""
"""Give a thread its title, or record its settings: a None leaves the stored value as it is."""
MESSAGE_COLUMNS = 'id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx'
SUMMARY_COLUMNS = "thread, level, idx, text, bytes, message, at, agent"
OUTLINE_COLUMNS = (
    "thread, epoch, lines, bytes, boundary, since, cut_at, gone, tail_start, tokens, draining, "
    "position, version, floor, steps"
)
SEARCH_COLUMNS = "thread, agent, line, level, idx, message, since, at, text, words, length"
DETAIL_COLUMNS = "agent, line, level, idx, message, since, text"
CALL_COLUMNS = (
    "thread, key, n, model, level, idx, prompts, answers, line, outcome, "
    "input_tokens, output_tokens, agent"
)


def insert(table: str, columns: str, *, dialect: Dialect = "sqlite") -> str:
    """`INSERT INTO table (columns) VALUES (...)` with the dialect's placeholders."""
    return f"INSERT INTO {table} ({columns}) VALUES ({marks(columns, dialect=dialect)})"


def marks(columns: str, *, dialect: Dialect = "sqlite") -> str:
    """The VALUES placeholders for `columns`: `?, ?, ...` (SQLite) or `$1, $2, ...`."""
    count = columns.count(",") + 1
    if dialect == "sqlite":
        return ", ".join("?" * count)
    return ", ".join(f"${k}" for k in range(1, count + 1))


Dialect = Literal["sqlite", "postgresql"]
PG: Dialect = "postgresql"


def statements(filename: str, *, dialect: Dialect = "sqlite") -> list[str]:
    """The SQL statements of one collection file in a dialect, comments dropped.

    Where the dialects differ, a collection has a variant for PostgreSQL next to it
    (`search.postgresql.sql` beside `search.sql`); otherwise both read the one file. A statement
    ends with a `;` at the end of a line, except inside a body: a trigger's BEGIN ... END
    (SQLite) or a function's `$$ ... $$` (PostgreSQL).
    """
    path = COLLECTIONS / filename
    variant = path.with_suffix(f".{dialect}.sql")
    text = (variant if variant.exists() else path).read_text(encoding="utf-8")
    found, current = [], []
    for line in text.splitlines():
        if line.lstrip().startswith("--") or not line.strip():
            continue
        current.append(line)
        if line.rstrip().endswith(";") and not _in_body("\n".join(current)):
            found.append("\n".join(current).rstrip().removesuffix(";"))
            current = []
    if current:
        found.append("\n".join(current))
    return found


def _in_body(statement: str) -> bool:
    """Whether a statement's last `;` so far is inside a trigger's or a function's body."""
    if statement.count("$$") % 2:
        return True
    upper = statement.upper()
    trigger = upper.lstrip().startswith("CREATE TRIGGER") and re.search(r"\bBEGIN\b", upper)
    return bool(trigger) and upper.splitlines()[-1].strip() != "END;"


def numbered(sql: str) -> str:
    """`a = ?, b = ?` in PostgreSQL's style: `a = $1, b = $2` (the SQL holds no `?` otherwise)."""
    parts = sql.split("?")
    return "".join(f"{part}${k}" for k, part in enumerate(parts[:-1], start=1)) + parts[-1]


def about_from_row(row: Sequence[Any]) -> About:
    thread, title, settings = row
    return About(thread=thread, title=title, settings=settings)


def parse(at: str | None) -> datetime | None:
    return None if at is None else datetime.fromisoformat(at)


def when(at: datetime | None) -> str | None:
    return None if at is None else format_at(at)


INSERT_MESSAGE = f"""
INSERT INTO message ({MESSAGE_COLUMNS}, native)
VALUES (
    ?, ?, coalesce((SELECT max(seq) FROM message WHERE thread = ?), -1) + 1,
    CASE WHEN ? THEN NULL
         ELSE coalesce((SELECT max(idx) FROM message WHERE thread = ?), -1) + 1 END,
    ?, ?, ?, ?, ?, ?, ?,
    CASE WHEN ? THEN coalesce((SELECT max(sidx) FROM message
                               WHERE thread = ? AND author = ?), -1) + 1 END,
    ?
)
ON CONFLICT (id) DO NOTHING
RETURNING seq, idx, sidx
"""
"""Store a message with its thread's next seq, and its next idx when shared or its agent's
next step index when a step: None back for a known id.

Each max() is a subquery of its own, read from the end of an index on (thread, seq),
(thread, idx) and (thread, author, sidx): one SELECT with several would walk the whole thread."""


def insert_message_args(message: Message, weight: int, native: str | None) -> tuple[Any, ...]:
    m = message
    return (
        m.id, m.thread, m.thread, m.step, m.thread, m.author, m.to, m.text, format_at(m.at),
        m.step, m.files_json(), weight, m.step, m.thread, m.author, native,
    )  # fmt: skip


def check_redelivery(message: Message, stored: Stored) -> None:
    """A known id is fine with the same content (ignored); other content is a ConflictError."""
    if stored.message.content != message.content:
        raise ConflictError(
            f"message id {message.id!r} is already stored with other content "
            f"(thread {stored.message.thread!r}); the stored message is kept",
            field="id",
        )


def stored_from_row(row: Sequence[Any]) -> Stored:
    id, thread, seq, index, author, to, text, at, step, files, weight, step_index = row
    message = Message(
        id=id,
        thread=thread,
        author=_legacy(author),
        to=_legacy(to),
        text=_legacy(text),
        at=datetime.fromisoformat(at),
        step=bool(step),
        files=tuple(File(**{**f, "name": _legacy(f["name"])}) for f in json.loads(files)),
    )
    return Stored(message=message, seq=seq, index=index, weight=weight, step_index=step_index)


def _legacy(text: str) -> str:
    """A NUL that SQLite stored before messages holding one were refused, read as U+FFFD."""
    return text.replace("\x00", "\ufffd")


def summary_row(node: Summary) -> tuple[Any, ...]:
    n = node
    return (n.thread, n.level, n.index, n.text, n.bytes, n.message, format_at(n.at), n.agent)


def summary_from_row(row: Sequence[Any]) -> Summary:
    thread, level, index, text, size, message, at, agent = row
    return Summary(
        thread=thread,
        agent=agent,
        level=level,
        index=index,
        text=text,
        bytes=size,
        message=message,
        at=datetime.fromisoformat(at),
    )


def new_outline_row(thread: str) -> tuple[Any, ...]:
    """The row of a thread's first message: nothing processed yet, a fresh epoch."""
    return (thread, uuid.uuid4().hex, "[]", 0, 0, None, None, None, 0, 0, False, -1, 0, 0, "{}")


def entries(value: Sequence[Sequence[Any]]) -> list[Entry]:
    return [(lv, ix, by, datetime.fromisoformat(at)) for lv, ix, by, at in value]


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


def outline_from_row(row: Sequence[Any], tail: Sequence[Sequence[Any]]) -> Outline:
    (thread, epoch, lines, size, boundary, since, cut_at, gone, _start, tokens, draining,
     position, version, floor, steps) = row  # fmt: skip
    return Outline(
        thread=thread,
        epoch=epoch,
        version=version,
        floor=floor,
        steps=steps_from_json(steps),
        lines=entries(json.loads(lines)),
        bytes=size,
        boundary=boundary,
        since=parse(since),
        cut_at=parse(cut_at),
        gone=parse(gone),
        tail=deque(
            TailItem(id=id, weight=weight, at=datetime.fromisoformat(at), step=bool(step), seq=seq)
            for id, weight, at, step, seq in tail
        ),
        tokens=tokens,
        draining=bool(draining),
        position=position,
    )


def outline_update(after: Outline, *, lines_changed: bool) -> tuple[str, list[Any]]:
    """The SET clause and its values for a commit (lines only when they changed)."""
    start = after.tail[0].seq if after.tail else after.position + 1
    columns = ["bytes", "boundary", "since", "cut_at", "gone", "tail_start", "tokens", "draining",
               "position", "floor"]  # fmt: skip
    values: list[Any] = [
        after.bytes, after.boundary, when(after.since), when(after.cut_at), when(after.gone),
        start, after.tokens, after.draining, after.position, after.floor,
    ]  # fmt: skip
    if lines_changed:
        columns += ["lines", "steps"]
        values += [lines_json(after.lines), steps_json(after.steps)]
    return ", ".join(f"{c} = ?" for c in columns), values


INSERT_CALL = f"""
INSERT INTO call ({CALL_COLUMNS}) VALUES ({marks(CALL_COLUMNS)})
ON CONFLICT (thread, key) DO UPDATE SET
    answers = excluded.answers, line = excluded.line, outcome = excluded.outcome,
    input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens
WHERE call.outcome = 'fallback' AND excluded.outcome <> 'fallback'
"""
"""Record a call. A pin keeps its first answers, but a fallback (an ask that kept failing) gives
way to the answers of the same request asked again, so a replay then gives the answered line."""


def call_key(model: str, prompts: Sequence[str]) -> str:
    """The pin of a conversation: its model (name, settings, instructions) and every prompt."""
    return hashlib.sha256(json.dumps([model, list(prompts)]).encode("utf-8")).hexdigest()


def call_row(ask: Ask, model: str, n: int) -> tuple[Any, ...]:
    return (
        ask.thread, call_key(model, ask.prompts), n, model, ask.level, ask.index,
        json.dumps(list(ask.prompts), ensure_ascii=False),
        json.dumps(list(ask.answers), ensure_ascii=False),
        ask.line, ask.outcome, ask.input_tokens, ask.output_tokens, ask.agent,
    )  # fmt: skip


def ask_from_row(row: Sequence[Any]) -> Ask:
    (thread, _key, _n, _model, level, index, prompts, answers, line, outcome, input_tokens,
     output_tokens, agent) = row  # fmt: skip
    return Ask(
        thread=thread,
        agent=agent,
        level=level,
        index=index,
        prompts=tuple(json.loads(prompts)),
        answers=tuple(json.loads(answers)),
        line=line,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        outcome=outcome,
    )


def message_search_row(
    message: Message, index: int, language: str, *, agent: str = ""
) -> tuple[Any, ...]:
    """A message's search row: its line (`line_of`) and its day, stemmed in `language`; a
    step's is its agent's, at its step index."""
    m, at = message, format_at(message.at)
    found = terms.indexed(line_of(m), m.at, m.at, language)
    words = terms.keyed(terms.key(m.thread, agent), found)
    return (m.thread, agent, False, 0, index, m.id, at, at, line_of(m), words, len(found))


def stored_search_rows(messages: Sequence[Stored], language: str) -> list[tuple[Any, ...]]:
    """The search rows of stored messages: shared ones at their index, steps in their agent's
    tree at their step index (a step stored before step trees, with no agent, is not indexed)."""
    found = []
    for s in messages:
        m = s.message
        if not m.step and s.index is not None:
            found.append(message_search_row(m, s.index, language))
        elif m.step and m.author and s.step_index is not None:
            found.append(message_search_row(m, s.step_index, language, agent=m.author))
    return found


def line_search_row(node: Summary, since: datetime, language: str) -> tuple[Any, ...]:
    """A line's search row: its text and the days from `since` (its first message's) to its
    `at`, stemmed in `language`."""
    found = terms.indexed(node.text, since, node.at, language)
    words = terms.keyed(terms.key(node.thread, node.agent), found)
    return (
        node.thread, node.agent, True, node.level, node.index, None, format_at(since),
        format_at(node.at),
        node.text, words, len(found),
    )  # fmt: skip


FIRST_AT = """
SELECT idx, at FROM message WHERE thread = ? AND NOT step AND idx IN ({})
"""
"""The `at` of shared messages by index: the first message of each line being indexed."""


def first_indexes(nodes: Sequence[Summary]) -> list[int]:
    """The index of the first message each node covers."""
    return sorted({node.index * 2**node.level for node in nodes if not node.agent})


def line_search_rows(
    nodes: Sequence[Summary], firsts: dict[int, str], language: str
) -> list[tuple[Any, ...]]:
    """The search rows of lines, given the `at` of their first messages by index (a line whose
    first message is not stored counts from its own `at`)."""
    found = []
    for node in nodes:
        # `firsts` are shared messages': a step tree's line counts from its own `at`.
        first = None if node.agent else firsts.get(node.index * 2**node.level)
        since = datetime.fromisoformat(first) if first is not None else node.at
        found.append(line_search_row(node, since, language))
    return found


def thread_search_rows(
    messages: Sequence[Stored], nodes: Sequence[Summary], language: str
) -> list[tuple[Any, ...]]:
    """The search rows of a thread's messages and lines (an index being rebuilt)."""
    shared = [s for s in messages if s.index is not None and not s.message.step]
    firsts = {s.index: format_at(s.message.at) for s in shared if s.index is not None}
    return stored_search_rows(messages, language) + line_search_rows(nodes, firsts, language)


def outline_row(outline: Outline) -> tuple[Any, ...]:
    """The row of an outline loaded from elsewhere: a fresh epoch and version in this store."""
    o = outline
    start = o.tail[0].seq if o.tail else o.position + 1
    return (
        o.thread, uuid.uuid4().hex, lines_json(o.lines), o.bytes, o.boundary, when(o.since),
        when(o.cut_at), when(o.gone), start, o.tokens, o.draining, o.position, 0, o.floor,
        steps_json(o.steps),
    )  # fmt: skip


def loaded_message_row(stored: Stored) -> tuple[Any, ...]:
    """The row of a message loaded from elsewhere, in its place: its seq, index and weight."""
    m = stored.message
    return (
        m.id, m.thread, stored.seq, stored.index, m.author, m.to, m.text, format_at(m.at), m.step,
        m.files_json(), stored.weight, stored.step_index,
    )  # fmt: skip
