"""A thread's records as a store carries them across, and how a load merges them into a store.

`Store.export_thread` reads everything a store holds for one thread as `ThreadRecords`;
`Store.load_records` writes records in one transaction. Every store shares `plan`, the pure
part of a load: it compares what is stored with what comes in, refuses a contradiction before
anything is written, and says what to insert. So a load is idempotent (what is stored as it
comes is skipped) and the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from .._generated import Generation, Name
from ..contract import About, Ask, Outline, Stored, Summary
from ..errors import ConflictError, StoreError
from ..lines import node_id
from ._consistency import check_thread
from ._rows import Row, ask_from_row, call_key

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class RecordedCall:
    """A recorded summarizer conversation, as the `call` collection keeps it."""

    model: str
    """The model key: the model's name, its settings and the instructions."""
    n: int
    """Its place among the thread's calls, in the order they were made."""
    ask: Ask
    """The conversation: prompts, answers, the line, the outcome and the tokens."""

    @property
    def key(self) -> str:
        """The pin: a hash of the model key and every prompt (nothing per run)."""
        return call_key(self.model, self.ask.prompts)


@dataclass(frozen=True, kw_only=True)
class ThreadRecords:
    """Everything a store holds for one thread: what an export reads and a load writes."""

    thread: str
    messages: tuple[Stored, ...] = ()
    """In seq order, with their seq, index and weight."""
    summaries: tuple[Summary, ...] = ()
    """Sorted by level, index."""
    outline: Outline | None = None
    """None: the thread has no outline yet (a load then starts a fresh one)."""
    calls: tuple[RecordedCall, ...] = ()
    """In the order they were made."""
    about: About | None = None
    """Its title and the settings it was built with; a load writes those it gives."""
    natives: Mapping[str, str] = field(default_factory=dict)
    """The provider's forms of the messages that have one, by id (see
    `History.message_created`): a load writes them with the messages it writes."""
    generations: tuple[Generation, ...] = ()
    """Its nodes' texts after their first (docs/generations.md), by node and number."""
    names: tuple[Name, ...] = ()
    """The display names that apply in it: its own, and the store-wide ones."""
    shown: tuple[int, int] = (0, 0)
    """Its newest change, and the newest its agents' outline has taken."""


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """What a load did."""

    threads: int
    """Threads the records were for."""
    written: int
    """Records written (messages, nodes, calls and outlines)."""
    skipped: int
    """Records skipped because the store already held them as they came."""


OutlineWrite = Literal["keep", "create", "update"]


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a load writes for one thread, once nothing in it contradicts the store."""

    thread: str
    messages: tuple[Stored, ...]
    indexed: tuple[Stored, ...]
    """The messages to index for search: those the thread's outline has processed once loaded
    and the store has not indexed (a message is indexed by the commit that processes it)."""
    summaries: tuple[Summary, ...]
    calls: tuple[RecordedCall, ...]
    outline: Outline | None
    """The outline to write; None with `create` is a fresh outline (nothing processed yet)."""
    write: OutlineWrite
    """`create`: insert the thread's outline row; `update`: overwrite it, bumping its version."""
    clear: bool
    """Delete the thread's summaries first (a replace)."""
    skipped: int
    about: About | None = None
    """A title or settings to give the thread (each kept as stored where this has none)."""
    natives: Mapping[str, str] = field(default_factory=dict)
    """The provider's forms of the messages it writes that have one, by id."""

    @property
    def written(self) -> int:
        return (
            len(self.messages)
            + len(self.summaries)
            + len(self.calls)
            + (self.write != "keep")
            + (self.about is not None)
        )


def check_batch(records: Sequence[ThreadRecords]) -> None:
    """Refuse a batch that names a thread twice or gives one message id to two threads."""
    threads: set[str] = set()
    owners: dict[str, str] = {}
    for r in records:
        if r.thread in threads:
            raise ConflictError(f"thread {r.thread!r} comes twice in one load", field="thread")
        threads.add(r.thread)
        for s in r.messages:
            owner = owners.setdefault(s.message.id, r.thread)
            if owner != r.thread:
                raise ConflictError(
                    f"message {s.message.id!r} comes in threads {owner!r} and {r.thread!r}",
                    field="id",
                )


def plan(
    stored: ThreadRecords | None,
    incoming: ThreadRecords,
    *,
    foreign: Mapping[str, str],
    replace: bool,
) -> Plan:
    """Compare `incoming` with what the store holds for its thread; say what to write.

    Args:
        stored: the thread as stored, or None when the store does not hold it.
        incoming: the records to load.
        foreign: incoming message ids the store holds in another thread, with that thread.
        replace: the thread's summaries and outline become the incoming ones (a rebuild); the
            stored outline must still have the incoming outline's epoch and version.

    Raises:
        ConflictError: a record that contradicts the store (another text for the same node,
            another message under the same id), naming it.
        InputError: records that contradict one another once merged with the store (an outline
            past the thread's last message, a line naming no node, a gap in the seqs, ...).
        StoreError: a replace whose thread changed or was erased since it was read.
    """
    thread = incoming.thread
    _check_thread(incoming)
    old = stored or ThreadRecords(thread=thread)
    if replace:
        _check_unchanged(old, incoming)
    messages, old_messages = _new_messages(old, incoming, foreign)
    summaries, old_summaries = _new_summaries(() if replace else old.summaries, incoming)
    calls, old_calls = _new_calls(old, incoming)
    write, outline = _outline_write(old, incoming, replace=replace)
    if write == "create" and outline is None and not (messages or old.messages):
        write = "keep"  # nothing of the thread is stored: no outline to start
    kept_outline = write == "keep" and incoming.outline is not None
    after = outline if write != "keep" else old.outline
    check_thread(
        thread,
        sorted([*old.messages, *messages], key=lambda s: s.seq),
        [*(() if replace else old.summaries), *summaries],
        after,
        calls,
    )
    about = _new_about(old.about, incoming.about)
    known_about = incoming.about is not None and about is None
    return Plan(
        thread=thread,
        about=about,
        messages=tuple(messages),
        natives={
            s.message.id: incoming.natives[s.message.id]
            for s in messages
            if s.message.id in incoming.natives
        },
        indexed=_processed(old, messages, after),
        summaries=tuple(summaries),
        calls=tuple(calls),
        outline=outline,
        write=write,
        clear=replace,
        skipped=old_messages + old_summaries + old_calls + kept_outline + known_about,
    )


def _processed(
    old: ThreadRecords, messages: Sequence[Stored], after: Outline | None
) -> tuple[Stored, ...]:
    """The stored and incoming messages that `after` has processed and the stored outline had
    not (none is past the position of a fresh outline)."""
    done = old.outline.position if old.outline else -1
    upto = after.position if after else -1
    new = [s for s in messages if s.seq <= upto]
    return tuple([*(s for s in old.messages if done < s.seq <= upto), *new])


def _new_about(old: About | None, incoming: About | None) -> About | None:
    """The title, settings and space to write: None when the store holds them already."""
    if incoming is None:
        return None
    title = incoming.title or (old.title if old else None)
    settings = incoming.settings or (old.settings if old else None)
    space = incoming.space or (old.space if old else None)
    if old is not None and (old.title, old.settings, old.space) == (title, settings, space):
        return None
    return incoming


def _new_messages(
    old: ThreadRecords, incoming: ThreadRecords, foreign: Mapping[str, str]
) -> tuple[list[Stored], int]:
    """The incoming messages the store lacks, and how many it holds already."""
    new: list[Stored] = []
    skipped = 0
    by_id = {s.message.id: s for s in old.messages}
    by_seq = {s.seq: s for s in old.messages}
    by_index = {s.index: s for s in old.messages if s.index is not None}
    for s in _unique(incoming.messages, lambda s: s.message.id, _message_conflict, _same_message):
        m = s.message
        if m.id in foreign:
            raise ConflictError(
                f"message {m.id!r} is stored in thread {foreign[m.id]!r}, not {m.thread!r}",
                field="id",
            )
        known = by_id.get(m.id)
        if known is not None:
            if not _same_message(known, s):
                raise _message_conflict(known, s, stored=True)
            skipped += 1
            continue
        at_index = None if s.index is None else by_index.get(s.index)
        for place, holder in (("seq", by_seq.get(s.seq)), ("index", at_index)):
            if holder is not None:
                raise ConflictError(
                    f"message {m.id!r} would take {place} {getattr(s, place)} of thread "
                    f"{m.thread!r}, which message {holder.message.id!r} holds",
                    field=place,
                )
        by_seq[s.seq] = s
        if s.index is not None:
            by_index[s.index] = s
        new.append(s)
    return new, skipped


def _new_summaries(stored: Sequence[Summary], incoming: ThreadRecords) -> tuple[list[Summary], int]:
    new: list[Summary] = []
    skipped = 0
    nodes = {(n.agent, n.level, n.index): n for n in stored}
    for node in _unique(incoming.summaries, lambda n: (n.agent, n.level, n.index), _node_conflict):
        known = nodes.get((node.agent, node.level, node.index))
        if known is None:
            new.append(node)
        elif known == node:
            skipped += 1
        else:
            raise _node_conflict(known, node, stored=True)
    return new, skipped


def _new_calls(old: ThreadRecords, incoming: ThreadRecords) -> tuple[list[RecordedCall], int]:
    new: list[RecordedCall] = []
    skipped = 0
    pins = {c.key: c for c in old.calls}
    for call in _unique(incoming.calls, lambda c: c.key, _call_conflict, _same_call):
        known = pins.get(call.key)
        if known is None or _answers_fallback(known, call):
            new.append(call)
        elif _same_call(known, call) or _answers_fallback(call, known):
            skipped += 1  # its place `n` may differ: a pin is its request and its answers
        else:
            raise _call_conflict(known, call, stored=True)
    return new, skipped


def _outline_write(
    old: ThreadRecords, incoming: ThreadRecords, *, replace: bool
) -> tuple[OutlineWrite, Outline | None]:
    new = incoming.outline
    if replace:
        return "update", new
    if old.outline is None:
        return "create", new
    if new is None or new.position < old.outline.position:
        return "keep", None  # the stored outline is further along the same messages
    if new.position > old.outline.position:
        return "update", new
    if _state(new) != _state(old.outline):
        raise ConflictError(
            f"the outline of thread {old.thread!r} at position {new.position} differs from the "
            "stored one",
            field="outline",
        )
    return "keep", None


def _check_thread(incoming: ThreadRecords) -> None:
    thread = incoming.thread
    named = [s.message.thread for s in incoming.messages]
    named += [n.thread for n in incoming.summaries] + [c.ask.thread for c in incoming.calls]
    if incoming.outline is not None:
        named.append(incoming.outline.thread)
    for other in named:
        if other != thread:
            raise ConflictError(
                f"a record of thread {other!r} is among the records of thread {thread!r}",
                field="thread",
            )


def _check_unchanged(old: ThreadRecords, incoming: ThreadRecords) -> None:
    if old.outline is None or incoming.outline is None:
        raise StoreError(f"thread {old.thread!r} was erased while it was rebuilt; nothing changed")
    if (old.outline.epoch, old.outline.version) != (
        incoming.outline.epoch,
        incoming.outline.version,
    ):
        raise StoreError(
            f"thread {old.thread!r} changed while it was rebuilt (version {old.outline.version}, "
            f"expected {incoming.outline.version}); nothing changed, rebuild it again"
        )


def _state(o: Outline) -> tuple[object, ...]:
    """An outline without what is per store (its epoch and version)."""
    return (
        o.lines,
        o.bytes,
        o.boundary,
        o.since,
        o.cut_at,
        o.gone,
        list(o.tail),
        o.tokens,
        o.draining,
        o.position,
        o.floor,
        o.steps,
    )


def _same_message(a: Stored, b: Stored) -> bool:
    return (a.message.id, a.message.content, a.seq, a.index, a.step_index, a.weight) == (
        b.message.id,
        b.message.content,
        b.seq,
        b.index,
        b.step_index,
        b.weight,
    )


def _same_call(a: RecordedCall, b: RecordedCall) -> bool:
    return (a.model, a.ask) == (b.model, b.ask)


def _answers_fallback(old: RecordedCall, new: RecordedCall) -> bool:
    """`new` answers the request `old` kept failing on: the answer replaces the fallback."""
    return old.ask.outcome == "fallback" and new.ask.outcome != "fallback"


def _unique(
    items: Iterable[T],
    key: Callable[[T], Hashable],
    conflict: Callable[..., ConflictError],
    same: Callable[[T, T], bool] = operator.eq,
) -> list[T]:
    """`items` without repeats; two items with one key that disagree are a conflict."""
    seen: dict[Hashable, T] = {}
    for item in items:
        first = seen.setdefault(key(item), item)
        if not same(first, item):
            raise conflict(first, item, stored=False)
    return list(seen.values())


def _differs(what: str, stored: bool, old: str, new: str) -> str:
    if stored:
        return f"is stored with other {what} ({old!r}) than the records loaded ({new!r})"
    return f"comes twice with different {what} ({old!r}, then {new!r})"


def _message_conflict(known: Stored, new: Stored, *, stored: bool) -> ConflictError:
    def shown(s: Stored) -> str:
        return _short(f"thread {s.message.thread}, seq {s.seq}: {s.message.text}")

    return ConflictError(
        f"message {new.message.id!r} {_differs('content', stored, shown(known), shown(new))}; "
        "nothing was loaded",
        field="id",
    )


def _node_conflict(known: Summary, new: Summary, *, stored: bool) -> ConflictError:
    node = node_id(new.thread, new.level, new.index, agent=new.agent)
    return ConflictError(
        f"node {node!r} {_differs('text', stored, _short(known.text), _short(new.text))}; "
        "nothing was loaded",
        field="summary",
    )


def _call_conflict(known: RecordedCall, new: RecordedCall, *, stored: bool) -> ConflictError:
    ask = new.ask
    old, answers = (_short(" | ".join(c.ask.answers)) for c in (known, new))
    return ConflictError(
        f"the call {new.key[:16]!r} of thread {ask.thread!r} for node ({ask.level}, "
        f"{ask.index}) {_differs('answers', stored, old, answers)}; nothing was loaded",
        field="call",
    )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_from_row(row: Row) -> RecordedCall:
    """A call from its row, with its model key and place."""
    return RecordedCall(model=row["model"], n=row["n"], ask=ask_from_row(row))
