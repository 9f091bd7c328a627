"""Carry a history to another store: export threads to JSONL, load them elsewhere.

One JSON object a line, each with its `kind`: a `chat-history` header, then per thread its title
and the settings it was built with (when it has them), its messages (with their seq, index and
weight), its summaries, its outline and its recorded calls.
What was generated travels with the messages, so the other store never pays for it again. A
load reads and checks the whole file first, then writes it in one transaction: what the store
already holds as it comes is skipped, and a record that contradicts the store is refused,
naming it, before anything is written.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any, Literal, TextIO

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from .contract import (
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
    format_at,
    parse_at,
)
from .errors import ConflictError, InputError, NotFoundError
from .lines import size
from .store import Store
from .store.consistency import LARGEST, TOP_LEVEL
from .store.records import Call, Loaded, ThreadRecords

FORMAT = 2
FORMATS = (1, 2)
"""Format 2 adds step trees (SPEC version 2); a format 1 export loads as it is."""


Count = Annotated[int, Field(ge=0, le=LARGEST)]
"""A number a store holds: from 0 to the largest its columns take (2**63 - 1)."""
Level = Annotated[int, Field(ge=0, le=TOP_LEVEL)]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class HeaderLine(_Line):
    kind: Literal["chat-history"] = "chat-history"
    format: int = FORMAT


class FileLine(_Line):
    name: str
    mime: str | None = None
    size: Count = 0
    url: str | None = None

    @model_serializer(mode="wrap")
    def _without_url(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A file with no url is written as before urls were kept."""
        value: dict[str, Any] = handler(self)
        if value.get("url") is None:
            value.pop("url", None)
        return value


class MessageLine(_Line):
    kind: Literal["message"] = "message"
    id: str
    thread: str
    seq: Count
    index: Count | None
    author: str
    to: str
    text: str
    at: str
    step: bool
    files: list[FileLine]
    weight: Count
    step_index: Annotated[int, Field(ge=0, le=LARGEST)] | None = None


class SummaryLine(_Line):
    kind: Literal["summary"] = "summary"
    thread: str
    agent: str = ""
    level: Level
    index: Count
    text: str
    bytes: Count
    message: str | None
    at: str


class OutlineLine(_Line):
    kind: Literal["outline"] = "outline"
    thread: str
    lines: list[tuple[Level, Count, Count, str]]
    """`[level, index, bytes, at]`, oldest first."""
    bytes: Count
    boundary: Count
    since: str | None
    cut_at: str | None
    gone: str | None
    tail: list[tuple[str, Count, str, bool, Count]]
    """`[message id, weight, at, step, seq]`, oldest first."""
    tokens: Count
    draining: bool
    position: Annotated[int, Field(ge=-1, le=LARGEST)]
    floor: Count = 0
    steps: dict[str, StepOutlineLine] = Field(default_factory=dict)


class StepOutlineLine(_Line):
    lines: list[tuple[Level, Count, Count, str]]
    bytes: Count
    boundary: Count
    draining: bool


class CallLine(_Line):
    kind: Literal["call"] = "call"
    thread: str
    agent: str = ""
    n: Count
    model: str
    level: Level
    index: Count
    prompts: list[str]
    answers: list[str]
    line: str
    outcome: Literal["fit", "cut", "fallback"]
    input_tokens: Count
    output_tokens: Count


class ThreadLine(_Line):
    kind: Literal["thread"] = "thread"
    thread: str
    title: str | None
    settings: str | None
    """The settings it was built with, as the JSON its store keeps."""


Record = HeaderLine | ThreadLine | MessageLine | SummaryLine | OutlineLine | CallLine
_RECORD: TypeAdapter[Record] = TypeAdapter(Annotated[Record, Field(discriminator="kind")])


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


def record_lines(records: ThreadRecords) -> list[Record]:
    """A thread's records as JSONL lines: its title and settings, messages, summaries, outline,
    calls."""
    out: list[Record] = []
    if records.about is not None:
        a = records.about
        out.append(ThreadLine(thread=a.thread, title=a.title, settings=a.settings))
    out += [_message_line(s) for s in records.messages]
    out += [
        SummaryLine(
            thread=n.thread, agent=n.agent, level=n.level, index=n.index, text=n.text,
            bytes=n.bytes, message=n.message, at=format_at(n.at),
        )
        for n in records.summaries
    ]  # fmt: skip
    if records.outline is not None:
        out.append(_outline_line(records.outline))
    out += [
        CallLine(
            thread=c.ask.thread, agent=c.ask.agent, n=c.n, model=c.model, level=c.ask.level,
            index=c.ask.index,
            prompts=list(c.ask.prompts), answers=list(c.ask.answers), line=c.ask.line,
            outcome=c.ask.outcome, input_tokens=c.ask.input_tokens,
            output_tokens=c.ask.output_tokens,
        )
        for c in records.calls
    ]  # fmt: skip
    return out


def read_records(lines: Iterable[bytes | str], *, source: str = "<input>") -> list[ThreadRecords]:
    """Parse and check every JSONL line, grouped by thread in the order threads first appear.

    Raises:
        InputError: a line that is not a record, naming `source` and the line number.
        ConflictError: two outlines of one thread at one position that differ.
    """
    groups: dict[str, _Group] = defaultdict(_Group)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = _RECORD.validate_json(raw)
            _add(groups, record)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in e['loc']) or 'line'}: {e['msg']}"
                for e in exc.errors()[:3]
            )
            raise InputError(f"{source}:{number}: not a chat-history record ({problems})") from None
        except InputError as exc:
            raise type(exc)(f"{source}:{number}: {exc}", field=exc.field) from None
    return [group.records(thread) for thread, group in groups.items()]


class _Group:
    """One thread's records as they are read."""

    def __init__(self) -> None:
        self.messages: list[Stored] = []
        self.summaries: list[Summary] = []
        self.outline: Outline | None = None
        self.calls: list[Call] = []
        self.about: About | None = None

    def records(self, thread: str) -> ThreadRecords:
        return ThreadRecords(
            thread=thread,
            about=self.about,
            messages=_numbered(sorted(self.messages, key=lambda s: s.seq)),
            summaries=tuple(sorted(self.summaries, key=lambda n: (n.agent, n.level, n.index))),
            outline=self.outline,
            calls=tuple(sorted(self.calls, key=lambda c: c.n)),
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


def _add(groups: dict[str, _Group], record: Record) -> None:
    match record:
        case HeaderLine(format=version):
            if version not in FORMATS:
                raise InputError(
                    f"export format {version!r} is not one of {FORMATS}", field="format"
                )
        case ThreadLine():
            if record.settings is not None:
                _check_settings(record.settings)
            groups[record.thread].about = About(
                thread=record.thread, title=record.title, settings=record.settings
            )
        case MessageLine():
            groups[record.thread].messages.append(_stored(record))
        case SummaryLine():
            if record.bytes != size(record.text):
                raise InputError(
                    f"summary bytes {record.bytes!r} is not the size of its text "
                    f"({size(record.text)})",
                    field="bytes",
                )
            groups[record.thread].summaries.append(
                Summary(
                    thread=record.thread, agent=record.agent, level=record.level,
                    index=record.index, text=record.text, bytes=record.bytes,
                    message=record.message, at=parse_at(record.at),
                )
            )  # fmt: skip
        case OutlineLine():
            group = groups[record.thread]
            group.outline = _furthest(group.outline, _outline(record))
        case CallLine():
            ask = Ask(
                thread=record.thread, agent=record.agent, level=record.level,
                index=record.index, prompts=tuple(record.prompts),
                answers=tuple(record.answers), line=record.line,
                input_tokens=record.input_tokens, output_tokens=record.output_tokens,
                outcome=record.outcome,
            )  # fmt: skip
            groups[record.thread].calls.append(Call(model=record.model, n=record.n, ask=ask))


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


def _message_line(s: Stored) -> MessageLine:
    m = s.message
    return MessageLine(
        id=m.id, thread=m.thread, seq=s.seq, index=s.index, author=m.author, to=m.to,
        text=m.text, at=format_at(m.at), step=m.step,
        files=[FileLine(name=f.name, mime=f.mime, size=f.size, url=f.url) for f in m.files],
        weight=s.weight, step_index=s.step_index,
    )  # fmt: skip


def _stored(line: MessageLine) -> Stored:
    message = Message(
        id=line.id, thread=line.thread, author=line.author, to=line.to, text=line.text,
        at=parse_at(line.at), step=line.step,
        files=tuple(
            File(name=f.name, mime=f.mime, size=f.size, url=f.url) for f in line.files
        ),
    )  # fmt: skip
    if (line.index is None) != line.step:
        raise InputError(
            f"message {line.id!r}: a step has no index and a shared message has one, got "
            f"step {line.step!r} with index {line.index!r}",
            field="index",
        )
    if line.step_index is not None and not line.step:
        raise InputError(
            f"message {line.id!r}: a shared message has no step index, got {line.step_index!r}",
            field="step_index",
        )
    return Stored(
        message=message, seq=line.seq, index=line.index, weight=line.weight,
        step_index=line.step_index,
    )  # fmt: skip


def _outline_line(o: Outline) -> OutlineLine:
    def at(value: datetime | None) -> str | None:
        return None if value is None else format_at(value)

    return OutlineLine(
        thread=o.thread,
        lines=_lines_out(o.lines),
        bytes=o.bytes, boundary=o.boundary, since=at(o.since), cut_at=at(o.cut_at),
        gone=at(o.gone),
        tail=[(t.id, t.weight, format_at(t.at), t.step, t.seq) for t in o.tail],
        tokens=o.tokens, draining=o.draining, position=o.position, floor=o.floor,
        steps={
            agent: StepOutlineLine(
                lines=_lines_out(steps.lines), bytes=steps.bytes, boundary=steps.boundary,
                draining=steps.draining,
            )
            for agent, steps in sorted(o.steps.items())
        },
    )  # fmt: skip


def _lines_out(lines: list[Entry]) -> list[tuple[int, int, int, str]]:
    return [(level, index, by, format_at(when)) for level, index, by, when in lines]


def _lines_in(lines: list[tuple[int, int, int, str]]) -> list[Entry]:
    return [(level, index, by, parse_at(when)) for level, index, by, when in lines]


def _outline(line: OutlineLine) -> Outline:
    def at(value: str | None) -> datetime | None:
        return None if value is None else parse_at(value)

    return Outline(
        thread=line.thread,
        epoch="",  # per store: a load gives the thread a fresh epoch
        version=0,
        lines=_lines_in(line.lines),
        bytes=line.bytes, boundary=line.boundary, since=at(line.since), cut_at=at(line.cut_at),
        gone=at(line.gone),
        tail=deque(
            TailItem(id=id, weight=weight, at=parse_at(when), step=step, seq=seq)
            for id, weight, when, step, seq in line.tail
        ),
        tokens=line.tokens, draining=line.draining, position=line.position, floor=line.floor,
        steps={
            agent: StepOutline(
                lines=_lines_in(o.lines), bytes=o.bytes, boundary=o.boundary, draining=o.draining
            )
            for agent, o in line.steps.items()
        },
    )  # fmt: skip
