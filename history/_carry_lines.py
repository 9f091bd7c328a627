"""The lines of an export (see `history.carry`): one pydantic model per `kind`, and the
conversions between them and the contract's types, both ways.

The models are strict and forbid unknown fields, so a load refuses a line it would misread
rather than guess; they are the format, and `FORMAT` is its version.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from ._generated import Form, Generation, Name
from ._names import check_name
from .contract import (
    Ask,
    Entry,
    File,
    Message,
    Outcome,
    Outline,
    StepOutline,
    Stored,
    Summary,
    TailItem,
    format_at,
    parse_at,
)
from .errors import InputError
from .lines import size
from .store._consistency import LARGEST, TOP_LEVEL
from .store._records import RecordedCall, ThreadRecords

FORMAT = 4
FORMATS = (1, 2, 3, 4)
"""Format 2 adds step trees (SPEC version 2), format 3 a message's provider form (`native`),
format 4 display names and generations (docs/generations.md); an export of an earlier format
loads as it is."""


Count = Annotated[int, Field(ge=0, le=LARGEST)]
"""A number a store holds: from 0 to the largest its columns take (2**63 - 1)."""
Level = Annotated[int, Field(ge=0, le=TOP_LEVEL)]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _as_before(value: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A line without each of `keys` that is None: written as it was before the key was kept
    (a file's `url` and `pages`, a message's `native`)."""
    for key in keys:
        if value.get(key) is None:
            value.pop(key, None)
    return value


class HeaderLine(_Line):
    kind: Literal["chat-outline", "chat-history"] = "chat-outline"
    """`chat-history` in the exports written before the project's new name: still read."""
    format: int = FORMAT


class FileLine(_Line):
    name: str
    mime: str | None = None
    size: Count = 0
    url: str | None = None
    pages: Count | None = None

    @model_serializer(mode="wrap")
    def _without_nones(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _as_before(handler(self), "url", "pages")


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
    native: str | None = None
    """The provider's form of an agent's own message, when it was stored with one."""

    @model_serializer(mode="wrap")
    def _without_native(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _as_before(handler(self), "native")


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
    fallback: bool = False
    """Its text is a fallback (`Summary.fallback`); written only when true."""

    @model_serializer(mode="wrap")
    def _without_fallback(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        value: dict[str, Any] = handler(self)
        if not value.get("fallback"):
            del value["fallback"]
        return value


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
    outcome: Outcome
    input_tokens: Count
    output_tokens: Count


class ThreadLine(_Line):
    kind: Literal["thread"] = "thread"
    thread: str
    title: str | None
    settings: str | None
    """The settings it was built with, as the JSON its store keeps."""
    space: str | None = None
    """The space the app put it in; written only when it has one (older exports have none)."""

    @model_serializer(mode="wrap")
    def _without_space(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _as_before(handler(self), "space")


class GenerationLine(_Line):
    """A node's text after its first (format 4)."""

    kind: Literal["generation"] = "generation"
    thread: str
    agent: str = ""
    level: Level
    index: Count
    generation: Annotated[int, Field(ge=1, le=LARGEST)]
    text: str
    bytes: Count
    form: Form
    fallback: bool = False
    made: Annotated[int, Field(ge=1, le=LARGEST)]


class NameLine(_Line):
    """A display name that applies in a thread (format 4): `scope` `""` is store-wide."""

    kind: Literal["name"] = "name"
    thread: str
    scope: str
    author: str
    name: str


class ShownLine(_Line):
    """A thread's newest change and the newest its agents' outline has taken (format 4)."""

    kind: Literal["shown"] = "shown"
    thread: str
    made: Count
    shown: Count


CarryLine = (
    HeaderLine
    | ThreadLine
    | MessageLine
    | SummaryLine
    | OutlineLine
    | CallLine
    | GenerationLine
    | NameLine
    | ShownLine
)
CARRY_LINE: TypeAdapter[CarryLine] = TypeAdapter(Annotated[CarryLine, Field(discriminator="kind")])
"""Reads any line, told apart by its `kind`."""


def record_lines(records: ThreadRecords) -> list[CarryLine]:
    """A thread's records as JSONL lines: its title and settings, messages, summaries, outline,
    calls."""
    out: list[CarryLine] = []
    if records.about is not None:
        a = records.about
        out.append(ThreadLine(thread=a.thread, title=a.title, settings=a.settings, space=a.space))
    out += [_message_line(s, records.natives.get(s.message.id)) for s in records.messages]
    out += [
        SummaryLine(
            thread=n.thread,
            agent=n.agent,
            level=n.level,
            index=n.index,
            text=n.text,
            bytes=n.bytes,
            message=n.message,
            at=format_at(n.at),
            fallback=n.fallback,
        )
        for n in records.summaries
    ]
    out += [
        GenerationLine(
            thread=g.thread,
            agent=g.agent,
            level=g.level,
            index=g.index,
            generation=g.generation,
            text=g.text,
            bytes=g.bytes,
            form=g.form,
            fallback=g.fallback,
            made=g.made,
        )
        for g in records.generations
    ]
    out += [
        NameLine(thread=records.thread, scope=n.thread, author=n.author, name=n.name)
        for n in records.names
    ]
    if records.shown != (0, 0):
        made, shown = records.shown
        out.append(ShownLine(thread=records.thread, made=made, shown=shown))
    if records.outline is not None:
        out.append(_outline_line(records.outline))
    out += [
        CallLine(
            thread=c.ask.thread,
            agent=c.ask.agent,
            n=c.n,
            model=c.model,
            level=c.ask.level,
            index=c.ask.index,
            prompts=list(c.ask.prompts),
            answers=list(c.ask.answers),
            line=c.ask.line,
            outcome=c.ask.outcome,
            input_tokens=c.ask.input_tokens,
            output_tokens=c.ask.output_tokens,
        )
        for c in records.calls
    ]
    return out


def summary_of(line: SummaryLine) -> Summary:
    """A summary line as the node it records; InputError when its bytes are not its text's."""
    if line.bytes != size(line.text):
        raise InputError(
            f"summary bytes {line.bytes!r} is not the size of its text ({size(line.text)})",
            field="bytes",
        )
    return Summary(
        thread=line.thread,
        agent=line.agent,
        level=line.level,
        index=line.index,
        text=line.text,
        bytes=line.bytes,
        message=line.message,
        at=parse_at(line.at),
        fallback=line.fallback,
    )


def call_of(line: CallLine) -> RecordedCall:
    """A call line as the recorded call it was exported from."""
    ask = Ask(
        thread=line.thread,
        agent=line.agent,
        level=line.level,
        index=line.index,
        prompts=tuple(line.prompts),
        answers=tuple(line.answers),
        line=line.line,
        input_tokens=line.input_tokens,
        output_tokens=line.output_tokens,
        outcome=line.outcome,
    )
    return RecordedCall(model=line.model, n=line.n, ask=ask)


def _message_line(s: Stored, native: str | None) -> MessageLine:
    m = s.message
    return MessageLine(
        id=m.id,
        thread=m.thread,
        seq=s.seq,
        index=s.index,
        author=m.author,
        to=m.to,
        text=m.text,
        at=format_at(m.at),
        step=m.step,
        files=[
            FileLine(name=f.name, mime=f.mime, size=f.size, url=f.url, pages=f.pages)
            for f in m.files
        ],
        weight=s.weight,
        step_index=s.step_index,
        native=native,
    )


def stored_of(line: MessageLine) -> Stored:
    """A message line as the stored message it was exported from; InputError when its step
    and indexes disagree."""
    message = Message(
        id=line.id,
        thread=line.thread,
        author=line.author,
        to=line.to,
        text=line.text,
        at=parse_at(line.at),
        step=line.step,
        files=tuple(
            File(name=f.name, mime=f.mime, size=f.size, url=f.url, pages=f.pages)
            for f in line.files
        ),
    )
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
        message=message,
        seq=line.seq,
        index=line.index,
        weight=line.weight,
        step_index=line.step_index,
    )


def _outline_line(o: Outline) -> OutlineLine:
    def at(value: datetime | None) -> str | None:
        return None if value is None else format_at(value)

    return OutlineLine(
        thread=o.thread,
        lines=_lines_out(o.lines),
        bytes=o.bytes,
        boundary=o.boundary,
        since=at(o.since),
        cut_at=at(o.cut_at),
        gone=at(o.gone),
        tail=[(t.id, t.weight, format_at(t.at), t.step, t.seq) for t in o.tail],
        tokens=o.tokens,
        draining=o.draining,
        position=o.position,
        floor=o.floor,
        steps={
            agent: StepOutlineLine(
                lines=_lines_out(steps.lines),
                bytes=steps.bytes,
                boundary=steps.boundary,
                draining=steps.draining,
            )
            for agent, steps in sorted(o.steps.items())
        },
    )


def _lines_out(lines: list[Entry]) -> list[tuple[int, int, int, str]]:
    return [(level, index, by, format_at(when)) for level, index, by, when in lines]


def _lines_in(lines: list[tuple[int, int, int, str]]) -> list[Entry]:
    return [Entry(level, index, by, parse_at(when)) for level, index, by, when in lines]


def outline_of(line: OutlineLine) -> Outline:
    """An outline line as an outline of no epoch: the store loading it gives it one."""

    def at(value: str | None) -> datetime | None:
        return None if value is None else parse_at(value)

    return Outline(
        thread=line.thread,
        epoch="",  # per store: a load gives the thread a fresh epoch
        version=0,
        lines=_lines_in(line.lines),
        bytes=line.bytes,
        boundary=line.boundary,
        since=at(line.since),
        cut_at=at(line.cut_at),
        gone=at(line.gone),
        tail=deque(
            TailItem(id=id, weight=weight, at=parse_at(when), step=step, seq=seq)
            for id, weight, when, step, seq in line.tail
        ),
        tokens=line.tokens,
        draining=line.draining,
        position=line.position,
        floor=line.floor,
        steps={
            agent: StepOutline(
                lines=_lines_in(o.lines), bytes=o.bytes, boundary=o.boundary, draining=o.draining
            )
            for agent, o in line.steps.items()
        },
    )


def generation_of(line: GenerationLine) -> Generation:
    """A generation line as the generation it records; InputError when its bytes are not its
    text's."""
    if line.bytes != size(line.text):
        raise InputError(
            f"generation {line.generation} of node {(line.level, line.index)!r} has bytes "
            f"{line.bytes}, but its text has {size(line.text)}",
            field="bytes",
        )
    return Generation(
        thread=line.thread,
        agent=line.agent,
        level=line.level,
        index=line.index,
        generation=line.generation,
        text=line.text,
        bytes=line.bytes,
        form=line.form,
        fallback=line.fallback,
        made=line.made,
    )


def name_of(line: NameLine) -> Name:
    if line.scope not in ("", line.thread):
        raise InputError(f"a name of thread {line.thread!r} has scope {line.scope!r}")
    return Name(thread=line.scope, author=line.author, name=check_name(line.name))
