"""Carry a history to another store: export threads to JSONL, load them elsewhere.

One JSON object a line, each with its `kind`: a `chat-outline` header (`chat-history` before
the project's new name, still read), then per thread its title (and its space, when it is in one)
and the settings it was built with (when it has them), its messages (with their seq, index and
weight), its summaries, its outline and its recorded calls.
What was generated travels with the messages, so the other store never pays for it again. A
load reads and checks the whole file first, then writes it in one transaction: what the store
already holds as it comes is skipped, and a record that contradicts the store is refused,
naming it, before anything is written.

The lines themselves (their models, and their conversion to and from the contract's types) are
in `_carry_lines`; this module writes them out, and reads them back grouped by thread.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TextIO

from pydantic import ValidationError

from ._carry_lines import (
    CARRY_LINE,
    FORMATS,
    CallLine,
    CarryLine,
    GenerationLine,
    HeaderLine,
    MessageLine,
    NameLine,
    OutlineLine,
    ShownLine,
    SummaryLine,
    ThreadLine,
    call_of,
    generation_of,
    name_of,
    outline_of,
    record_lines,
    stored_of,
    summary_of,
)
from ._checks import name_text, optional_argument_text, space_name, text
from ._generated import Generation, Name
from ._limits import without_bom
from .contract import About, Outline, Stored, Summary
from .errors import ConflictError, InputError, NotFoundError
from .settings import HistorySettings
from .store import Store
from .store._consistency import check_weight
from .store._records import Loaded, RecordedCall, ThreadRecords

ENCODING: str = HistorySettings.encoding
"""The encoding a thread's messages are weighed in when its export records no settings."""


@dataclass(frozen=True, kw_only=True)
class Exported:
    """What an export wrote."""

    threads: int
    records: int
    """Lines written, the header included."""


async def export(store: Store, out: TextIO, thread: str | None = None) -> Exported:
    """Write one thread (or every thread of the store) to `out` as JSONL.

    Raises:
        NotFoundError: `thread` is given and the store holds nothing of it.
    """
    optional_argument_text("thread", thread)
    threads = [thread] if thread is not None else await store.threads()
    out.write(HeaderLine().model_dump_json() + "\n")
    count, written = 1, 0
    for name in threads:
        records = await store.export_thread(name)
        if records is None:
            raise NotFoundError(f"thread {name!r} is not in the store {store.url!r}")
        for line in record_lines(records):
            out.write(line.model_dump_json() + "\n")
            count += 1
        written += 1
    return Exported(threads=written, records=count)


async def load(store: Store, lines: Iterable[bytes | str], *, source: str = "<input>") -> Loaded:
    """Load JSONL records into `store` in one transaction (see `read_records`)."""
    return await store.load_records(read_records(lines, source=source))


def read_records(lines: Iterable[bytes | str], *, source: str = "<input>") -> list[ThreadRecords]:
    """Parse and check every JSONL line, grouped by thread in the order threads first appear.

    Raises:
        InputError: a line that is not a record, naming `source` and the line number.
        ConflictError: two outlines of one thread at one position that differ.
    """
    groups: dict[str, _Group] = defaultdict(_Group)
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = without_bom(raw.encode() if isinstance(raw, str) else raw)
        if not raw.strip():
            continue
        try:
            record = CARRY_LINE.validate_json(raw)
            _add(groups, record)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in e['loc']) or 'line'}: {e['msg']}"
                for e in exc.errors()[:3]
            )
            raise InputError(f"{source}:{number}: not a chat-outline record ({problems})") from None
        except InputError as exc:
            raise type(exc)(f"{source}:{number}: {exc}", field=exc.field) from None
    return [group.records(thread) for thread, group in groups.items()]


class _Group:
    """One thread's records as they are read."""

    def __init__(self) -> None:
        self.messages: list[Stored] = []
        self.summaries: list[Summary] = []
        self.outline: Outline | None = None
        self.calls: list[RecordedCall] = []
        self.about: About | None = None
        self.natives: dict[str, str] = {}
        self.generations: list[Generation] = []
        self.names: list[Name] = []
        self.shown = (0, 0)

    def encoding(self) -> str:
        """The tiktoken encoding the thread's messages are weighed in: its settings' (they come
        before its messages in an export), else the default."""
        record = None if self.about is None else self.about.settings
        found = None if record is None else json.loads(record).get("encoding")
        return found if isinstance(found, str) and found else ENCODING

    def records(self, thread: str) -> ThreadRecords:
        return ThreadRecords(
            thread=thread,
            about=self.about,
            messages=_numbered(sorted(self.messages, key=lambda s: s.seq)),
            summaries=tuple(sorted(self.summaries, key=lambda n: (n.agent, n.level, n.index))),
            outline=self.outline,
            calls=tuple(sorted(self.calls, key=lambda c: c.n)),
            natives=self.natives,
            generations=tuple(sorted(self.generations, key=lambda g: (*g.key, g.generation))),
            names=tuple(self.names),
            shown=self.shown,
        )


def _numbered(messages: list[Stored]) -> tuple[Stored, ...]:
    """Messages with each step's step index, numbered as the store numbers them where a
    record carries none (an export of format 1, written before step trees)."""
    counts: dict[str, int] = {}
    out = []
    for s in messages:
        if s.message.step:
            index = counts.get(s.message.author, 0) if s.step_index is None else s.step_index
            s = replace(s, step_index=index)
            counts[s.message.author] = index + 1
        out.append(s)
    return tuple(out)


def _add(groups: dict[str, _Group], record: CarryLine) -> None:
    if not isinstance(record, HeaderLine):  # the same limit as a message's (MAX_NAME)
        name_text("thread", record.thread)
    match record:
        case HeaderLine(format=version):
            if version not in FORMATS:
                raise InputError(
                    f"export format {version!r} is not one of {FORMATS}", field="format"
                )
        case ThreadLine():
            if record.settings is not None:
                _check_settings(record.settings)
            space = None if record.space is None else space_name(record.space)
            groups[record.thread].about = About(
                thread=record.thread, title=record.title, settings=record.settings, space=space
            )
        case MessageLine():
            group = groups[record.thread]
            stored = stored_of(record)
            check_weight(stored, group.encoding())
            group.messages.append(stored)
            if record.native is not None:
                group.natives.setdefault(record.id, text("native", record.native))
        case SummaryLine():
            groups[record.thread].summaries.append(summary_of(record))
        case OutlineLine():
            group = groups[record.thread]
            group.outline = _furthest(group.outline, outline_of(record))
        case CallLine():
            groups[record.thread].calls.append(call_of(record))
        case GenerationLine():
            groups[record.thread].generations.append(generation_of(record))
        case NameLine():
            groups[record.thread].names.append(name_of(record))
        case ShownLine():
            groups[record.thread].shown = (record.made, record.shown)


def _check_settings(text: str) -> None:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InputError(f"settings must be a JSON object, got {text!r:.80}", field="settings")


def _furthest(known: Outline | None, new: Outline) -> Outline:
    """Of two outlines of one thread (two exports in one file), the one further along."""
    if known is None or new.position > known.position:
        return new
    if new.position == known.position and new != known:
        raise ConflictError(
            f"the outline of thread {new.thread!r} at position {new.position} comes twice, "
            "different",
            field="outline",
        )
    return known
