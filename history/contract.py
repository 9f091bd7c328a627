"""The types other code may import: messages, files, summaries and the outline."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ._checks import name_text, optional_text, required_text, text, wrong
from .errors import InputError

if TYPE_CHECKING:
    from ._generated import Generation, Name

FileKind = Literal["image", "text", "pdf", "other"]
Outcome = Literal["fit", "cut", "fallback"]


@dataclass(frozen=True, kw_only=True)
class File:
    """A file attached to a message; it weighs by what it is."""

    name: str
    """The file's name, shown in the message's line as ` [name]`."""
    mime: str | None = None
    """Its media type; its kind comes from this alone."""
    size: int = 0
    """Its size in bytes."""
    url: str | None = None
    """Where it is: a URL, or the pointer of the app it came from (`file-service://file-ab`).
    Kept with the message only: a line and a weight never use it."""
    pages: int | None = None
    """How many pages it has, when the app knows: a PDF weighs 1,500 tokens a page, its pages
    guessed from its size (one a 100,000 bytes, SPEC section 3) only when this is None."""

    def __post_init__(self) -> None:
        text("files.name", self.name)
        if self.mime is not None:
            text("files.mime", self.mime)
        if self.url is not None:
            text("files.url", self.url)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise InputError(
                f"files.size must be a whole number >= 0, got {self.size!r}", field="files.size"
            )
        pages = self.pages
        if pages is not None and (
            isinstance(pages, bool) or not isinstance(pages, int) or pages < 0
        ):
            raise InputError(
                f"files.pages must be a whole number >= 0 or None, got {pages!r}",
                field="files.pages",
            )

    @property
    def kind(self) -> FileKind:
        """`image`, `text` (text/* and JSON), `pdf` or `other`, from `mime` alone."""
        mime = (self.mime or "").split(";", 1)[0].strip().lower()
        if mime.startswith("image/"):
            return "image"
        if mime.startswith("text/") or mime == "application/json" or mime.endswith("+json"):
            return "text"
        if mime == "application/pdf":
            return "pdf"
        return "other"

    def to_json(self) -> dict[str, Any]:
        """`{"name", "mime", "size"}`, and `url` and `pages` when there are."""
        value: dict[str, Any] = {"name": self.name, "mime": self.mime, "size": self.size}
        if self.url is not None:
            value["url"] = self.url
        if self.pages is not None:
            value["pages"] = self.pages
        return value

    @classmethod
    def from_json(cls, value: object) -> File:
        """A file from its JSON form; a wrong shape is an InputError naming the field."""
        if not isinstance(value, Mapping):
            raise InputError(f"a file must be an object, got {value!r}", field="files")
        name = value.get("name")
        return cls(
            name=name if isinstance(name, str) else wrong("files.name", name, "a string"),
            mime=optional_text("files.mime", value.get("mime")),
            size=value.get("size", 0),
            url=optional_text("files.url", value.get("url")),
            pages=value.get("pages"),
        )


@dataclass(frozen=True, kw_only=True)
class Message:
    """A message as the app hands it over. Constructing one checks it."""

    id: str
    """Unique in the store."""
    thread: str
    """The conversation it belongs to."""
    author: str
    """Who wrote it (may be empty)."""
    text: str
    """What it says (may be empty)."""
    at: datetime
    """When it was written; timezone-aware."""
    to: str = ""
    """Whom it addresses; empty for nobody in particular."""
    step: bool = False
    """A private message: an agent's tool call or tool result."""
    files: tuple[File, ...] = field(default=())
    """Attached files."""

    def __post_init__(self) -> None:
        for key in ("id", "thread"):
            if not name_text(key, getattr(self, key)):
                raise InputError(f"{key} must not be empty", field=key)
        name_text("author", self.author)
        name_text("to", self.to)
        text("text", self.text)
        if not isinstance(self.at, datetime) or self.at.utcoffset() is None:
            raise InputError(f"at must be a timezone-aware datetime, got {self.at!r}", field="at")
        parse_at(self.at)
        if not isinstance(self.step, bool):
            raise InputError(f"step must be a boolean, got {self.step!r}", field="step")
        if not isinstance(self.files, tuple) or not all(isinstance(f, File) for f in self.files):
            raise InputError(f"files must be a tuple of File, got {self.files!r}", field="files")

    @property
    def content(self) -> tuple[object, ...]:
        """What makes two deliveries of one id the same message (`at` as an instant)."""
        return (self.thread, self.author, self.to, self.text, self.at, self.step, self.files)

    def files_json(self) -> str:
        return json.dumps([f.to_json() for f in self.files], ensure_ascii=False)

    def to_json(self) -> dict[str, Any]:
        """Its JSON form (SPEC section 8), what `from_json` reads: `to`, `step` and `files` only
        when it has them."""
        value: dict[str, Any] = {
            "id": self.id,
            "thread": self.thread,
            "author": self.author,
            "text": self.text,
            "at": format_at(self.at),
        }
        if self.to:
            value["to"] = self.to
        if self.step:
            value["step"] = True
        if self.files:
            value["files"] = [f.to_json() for f in self.files]
        return value

    @classmethod
    def from_json(cls, value: object) -> Message:
        """A message from its JSON form (SPEC section 8); a wrong shape names the field."""
        if not isinstance(value, Mapping):
            raise InputError(f"a message must be a JSON object, got {value!r}")
        files = value.get("files")
        if files is not None and not isinstance(files, list):
            wrong("files", files, "a list")
        step = value.get("step")
        return cls(
            id=required_text(value, "id"),
            thread=required_text(value, "thread"),
            author=required_text(value, "author"),
            text=required_text(value, "text"),
            to=optional_text("to", value.get("to")) or "",
            at=parse_at(value.get("at")),
            step=False if step is None else step,
            files=tuple(File.from_json(f) for f in files or ()),
        )


class NodeKey(NamedTuple):
    """A node's key in its thread."""

    agent: str
    """`""` for the shared tree; the agent whose step tree holds it otherwise."""
    level: int
    index: int  # type: ignore[assignment]  # the node's index, in place of tuple.index


class Entry(NamedTuple):
    """An outline line: the node it shows, its size and when it ends."""

    level: int
    index: int  # type: ignore[assignment]  # the node's index, in place of tuple.index
    bytes: int
    """The node's text in UTF-8 bytes."""
    at: datetime
    """The newest instant the node covers."""


def entries_json(lines: Iterable[Entry]) -> list[list[Any]]:
    """Outline lines as JSON: `[level, index, bytes, at]`, `at` as `format_at` writes it."""
    return [[level, index, size, format_at(at)] for level, index, size, at in lines]


@dataclass(frozen=True, kw_only=True)
class Summary:
    """A node of a tree: the line at `level`, `index`, over `2**level` shared messages, or over
    `2**level` of one agent's steps in that agent's step tree."""

    thread: str
    level: int
    index: int
    text: str
    bytes: int
    message: str | None
    """Level 0: the id of the message it summarizes."""
    at: datetime
    """The newest `at` among the messages it covers."""
    agent: str = ""
    """`""` for the shared tree; the agent whose step tree holds it otherwise."""
    fallback: bool = False
    """Its text is a fallback: the `cut` of its input, written because the summarizer was down
    or the same ask failed 5 times (SPEC section 5), to be asked again once it answers. A
    parent joined from such a line without a model call is not one itself."""

    @property
    def label(self) -> str:
        """`"{first}+{count}"`; `"s{first}+{count}"` for a node of a step tree."""
        span = 2**self.level
        return f"{'s' if self.agent else ''}{self.index * span}+{span}"


@dataclass(frozen=True, kw_only=True)
class TailItem:
    """A message still whole in the tail."""

    id: str
    weight: int
    at: datetime
    step: bool
    seq: int


def parse_at(value: object) -> datetime:
    """An aware datetime from ISO 8601 text (or a datetime); anything else is an InputError."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InputError(
                f"at must be ISO 8601 with an offset, got {value!r}", field="at"
            ) from None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InputError(f"at must be ISO 8601 with an offset, got {value!r}", field="at")
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise InputError(f"at is out of range in UTC: {value!r}", field="at") from None
    return value


def format_at(at: datetime) -> str:
    """The stored and printed form: ISO 8601 in UTC, microseconds only when not zero."""
    return at.astimezone(UTC).isoformat()


@dataclass(kw_only=True)
class StepOutline:
    """One agent's step outline: the lines of its steps that left the tail (SPEC section 6a)."""

    lines: list[Entry] = field(default_factory=list)
    bytes: int = 0
    boundary: int = 0
    """How many of the agent's steps left the tail: the step index of the first still whole."""
    draining: bool = False

    def copy(self) -> StepOutline:
        return replace(self, lines=list(self.lines))

    def to_json(self) -> dict[str, Any]:
        """As the trace prints it and the outline row keeps it."""
        return {
            "lines": entries_json(self.lines),
            "bytes": self.bytes,
            "boundary": self.boundary,
            "draining": self.draining,
        }


@dataclass(kw_only=True)
class Outline:
    """A thread's outline and tail: the state the processor moves forward one message at a time.

    Mutable on purpose: a batch works on a `copy()` and the store commits it whole, or not at all.
    """

    thread: str
    epoch: str
    """New for every incarnation of the thread id: a batch for an erased thread never commits."""
    version: int
    """Bumped by every commit, for optimistic concurrency."""
    lines: list[Entry]
    """The outline's lines, oldest first: what an agent is sent for the messages that left."""
    bytes: int
    """The outline's size: each line's bytes and one."""
    boundary: int
    """How many shared messages left the tail: the index of the first still whole."""
    since: datetime | None
    """The `at` of the tail's oldest message (None before the first message is processed)."""
    cut_at: datetime | None
    """The `at` of the message whose arrival made the last cut (None before the first cut)."""
    gone: datetime | None
    """The newest `at` of every message (shared or step) that ever left the tail."""
    tail: deque[TailItem]
    """The messages still whole, oldest first: a contiguous run of the processed ones by seq."""
    tokens: int
    """The tail's weight: the sum of its messages' tokens."""
    draining: bool
    """A fold is unfinished: lines keep merging until the outline is under its lower bound."""
    position: int
    """The seq of the last message processed (-1 before any)."""
    floor: int = 0
    """The tokens the tail held after the last message whose cut condition held."""
    steps: dict[str, StepOutline] = field(default_factory=dict)
    """Each agent's step outline, for the agents with a step that left the tail."""

    def copy(self) -> Outline:
        return replace(
            self,
            lines=list(self.lines),
            tail=deque(self.tail),
            steps={agent: o.copy() for agent, o in self.steps.items()},
        )

    @property
    def tail_start(self) -> int:
        """The seq of the tail's first message; with an empty tail, the next message's."""
        return self.tail[0].seq if self.tail else self.position + 1

    @property
    def outlined(self) -> bool:
        """Cut at least once: from then on its agents are sent the outline."""
        return self.cut_at is not None


@dataclass(frozen=True, kw_only=True)
class Stored:
    """A message as stored: with its place in the thread and its weight."""

    message: Message
    seq: int
    index: int | None
    """Its index among the thread's shared messages; None for a step."""
    weight: int
    step_index: int | None = None
    """A step's index among its agent's steps in the thread; None for a shared message."""

    def tail_item(self) -> TailItem:
        m = self.message
        return TailItem(id=m.id, weight=self.weight, at=m.at, step=m.step, seq=self.seq)


@dataclass(frozen=True, kw_only=True)
class Hit:
    """A search result: a line or a message, by the label to zoom into."""

    label: str
    """The node's label, `"{first message}+{count}"`; a message's is `"{index}+1"`."""
    level: int
    index: int
    text: str
    """The line, or the message as one line (author, text, file names)."""
    at: datetime
    """The newest instant the line covers; the message's own."""
    message: str | None
    """The id of the message the hit is on; None for a hit on a line."""
    since: datetime | None = None
    """The oldest instant the line covers (a message's own `at`); None when not known."""
    agent: str = ""
    """Whose it is: `''` for the shared messages and lines, else the agent of a step."""
    terms: tuple[str, ...] = ()
    """The query's words it holds (as the query wrote them, matched by their stems); empty for
    a message found through the messages next to it."""
    score: float = 0.0
    """How well it matched, as search ranks: a message up to 2 (its own match and its
    neighbourhood's, each against the best), a line up to 1."""

    @property
    def first(self) -> int:
        """The index of the first message it covers."""
        return self.index << self.level

    @property
    def count(self) -> int:
        """How many messages it covers."""
        return 1 << self.level


@dataclass(frozen=True, kw_only=True)
class About:
    """What a store knows of a thread besides its messages: its title, settings and space."""

    thread: str
    title: str | None = None
    """A name people know it by (a ChatGPT conversation's title); None when it has none."""
    settings: str | None = None
    """The settings its tree and outline were built with, as JSON (`settings.recorded`);
    None before it is first processed."""
    space: str | None = None


class Tally(NamedTuple):
    """One thread's recorded summarizer calls of one model, counted (`Store.tallies`)."""

    thread: str
    model: str
    """The model as its calls recorded it (the name, then what else its key holds)."""
    calls: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A thread as one transaction read it (`Store.snapshot`): what a view, a zoom and the
    inspecting commands are built from, so that its parts agree with each other."""

    outline: Outline
    nodes: tuple[Summary, ...]
    """The nodes of the shared outline's lines, in its order (with `tree`: every node of the
    shared tree, by level and index)."""
    steps: tuple[Summary, ...]
    """The nodes of `agent`'s step outline's lines, in its order (with `tree`: every node of
    every agent's step tree, by agent, level and index)."""
    tail: tuple[Stored, ...]
    """What an agent is sent whole: the outline's tail, then every message stored after it (not
    processed yet), in seq order."""
    natives: Mapping[str, str]
    """The provider's form (JSON) of the `tail`'s messages stored with one, by id."""
    about: About | None
    """Its title and the settings it was built with, when the store has either."""
    names: tuple[Name, ...] = ()
    """The display names that apply in the thread (`names.display` reads them)."""
    made: int = 0
    """The thread's newest change (0: it has none, and no generation after the first)."""
    shown: int = 0
    """The change its outline has taken: the newest generations an agent is shown."""
    generations: tuple[Generation, ...] = ()
    """Of each node in `nodes` and `steps`, its newest generation made by change `shown`, when
    it has one (with `tree`: every generation of the thread after the first)."""


@dataclass(frozen=True, kw_only=True)
class Task:
    """One line to write: the node it is for, the task text, and its `<input>` as placed."""

    thread: str
    level: int
    """The level of the node being written (0 for a message's own line)."""
    index: int
    """The index of the node being written."""
    prompt: str
    """The whole task, as sent."""
    input: str
    """The `<input>` text exactly as placed in the task (after any shortening)."""
    agent: str = ""
    """The agent whose step tree the node is in; `""` for the shared tree."""


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A model's raw answer to one ask, with the tokens the provider reported."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class Ask:
    """A finished conversation: what was sent, what came back, and the line it gave."""

    thread: str
    level: int
    index: int
    prompts: tuple[str, ...]
    """The user turns sent: the task, then the follow-ups."""
    answers: tuple[str, ...]
    """The normalised answers."""
    line: str
    input_tokens: int
    output_tokens: int
    outcome: Outcome
    """`fit`: an answer fitted; `cut`: no try fitted; `fallback`: the ask kept failing."""
    agent: str = ""
    """The agent whose step tree the node is in; `""` for the shared tree."""
    space: str | None = None  # its thread's, for `on_ask`; None in the calls read back


@dataclass(frozen=True, kw_only=True)
class ThreadDeleted:
    """A `thread.deleted` event (SPEC section 8): everything the thread held is erased."""

    thread: str
    """The thread erased; its id may be used again from here on, for a new conversation."""


Event = Message | ThreadDeleted
"""A line of a JSONL history (the trace's events): a message, or a thread's erasure."""
