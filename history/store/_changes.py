"""What a change to a thread's lines writes (docs/generations.md): display names, the nodes'
new generations, their search rows, the calls a re-summary made, and which change the outline
an agent is sent has taken. One transaction, checked against the outline it was made from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from .._generated import Generation, Name
from ..contract import Ask, Outline, Summary
from ..errors import ConflictError
from . import _rows as rows
from ._adapter import Transaction
from ._consistency import LARGEST
from ._kept import generation_from_row, generation_row, name_from_row
from ._records import ThreadRecords
from ._search.indexing import index_lines, post
from ._search.rows import line_stems, unposted_row


class Stale(Exception):
    """The outline moved (processed, or erased) since the change was made from it."""


@dataclass(frozen=True, kw_only=True)
class Change:
    """One change to a thread: written all together, or not at all."""

    generations: Sequence[Generation] = ()
    """The new generations (their `made` is given when written)."""
    current: Sequence[Summary] = ()
    """The changed nodes as they now read, to index them for search again."""
    names: Sequence[Name] = ()
    """Display names to set with it."""
    asks: Sequence[Ask] = field(default=())
    """The calls a re-summary made, recorded as every ask is."""
    model: str = ""
    """The key the calls are recorded under (`pins.model_key`)."""
    now: bool = False
    """The outline an agent is sent takes it at once, not at the next cut or fold."""


async def read_names(tx: Transaction, thread: str | None) -> list[Name]:
    """Every display name (None), or those that apply in `thread`."""
    found = await (tx.fetch("names") if thread is None else tx.fetch("thread_names", thread=thread))
    return sorted(map(name_from_row, found), key=lambda n: (n.thread, n.author))


async def read_authors(tx: Transaction, thread: str | None) -> set[str]:
    """Who the thread's messages (None: any message) are by or to."""
    found = await (
        tx.fetch("all_authors") if thread is None else tx.fetch("authors", thread=thread)
    )
    return {r["who"] for r in found}


async def read_author_threads(tx: Transaction, author: str) -> list[str]:
    return sorted(r["thread"] for r in await tx.fetch("author_threads", author=author))


async def read_generations(
    tx: Transaction,
    thread: str,
    keys: Sequence[tuple[int, int]] | None = None,
    agent: str = "",
    upto: int | None = None,
) -> list[Generation]:
    """The thread's generations after the first, by node and number; or, of each node `keys`
    of `agent`'s tree (`""`: the shared one) that has one, its newest made by change `upto`
    (None: its newest)."""
    if keys is None:
        rows_ = await tx.fetch("generations", thread=thread)
    elif not keys:
        return []
    else:
        rows_ = await tx.fetch(
            "node_generations",
            thread=thread,
            agent=agent,
            upto=LARGEST if upto is None else upto,
            **rows.node_keys(keys),
        )
    return sorted(map(generation_from_row, rows_), key=lambda g: (*g.key, g.generation))


async def shown(tx: Transaction, thread: str) -> tuple[int, int]:
    """The thread's newest change and the one its outline has taken: `(made, shown)`."""
    row = await tx.one("generation_shown", thread=thread)
    return (0, 0) if row is None else (row["made"], row["shown"])


async def write_generations(
    tx: Transaction, thread: str, generations: Sequence[Generation], *, now: bool
) -> int:
    """Write generations as the thread's next change (none: no change); its number, or 0."""
    made, taken = await shown(tx, thread)
    if not generations and not now:
        return 0
    if generations:
        made += 1
        await tx.executemany(
            "insert_generation",
            [generation_row(g) | {"made": made} for g in generations],
        )
    await tx.execute("set_generation_shown", thread=thread, made=made, shown=made if now else taken)
    return made


async def revise(
    tx: Transaction,
    thread: str,
    make: Callable[[ThreadRecords], Change | None],
    language: str,
) -> bool:
    """Read the thread whole (its outline row held), make a change from it and write it, in the
    caller's transaction: nothing can move between the read and the write. False when the
    store holds no outline of it."""
    await tx.fetch("lock_outline", thread=thread)
    row = await tx.one("outline", thread=thread)
    if row is None:
        return False
    # What a change reads: the tree, its later texts and the messages (no calls, no natives).
    outline = rows.outline_from_row(row)
    records = ThreadRecords(
        thread=thread,
        outline=outline,
        messages=tuple(map(rows.stored_from_row, await tx.fetch("thread_messages", thread=thread))),
        summaries=tuple(await _nodes(tx, thread)),
        generations=tuple(await read_generations(tx, thread)),
    )
    change = make(records)
    if change is not None:
        await write_change(tx, outline, change, language)
    return True


async def write_change(tx: Transaction, before: Outline, change: Change, language: str) -> None:
    """The change's transaction body; raises Stale when `before` is not the outline stored."""
    thread = before.thread
    bumped = await tx.execute(
        "bump_outline", thread=thread, epoch=before.epoch, version=before.version
    )
    if bumped != 1:
        raise Stale
    for name in change.names:
        await tx.execute("set_name", thread=name.thread, author=name.author, name=name.name)
    await write_generations(tx, thread, change.generations, now=change.now)
    await reindex(tx, thread, change.current, language)
    if change.asks:
        await record_calls(tx, thread, change.asks, change.model)


async def reindex(tx: Transaction, thread: str, current: Sequence[Summary], language: str) -> None:
    """Index lines for search again with their current texts. Their postings go first, found by
    the stems of every text each has had (its summary's and its generations': a row holds one
    of them), so what it costs is the lines' own words, not the thread's."""
    if not current:
        return
    keys = [{"thread": thread, "agent": n.agent, "level": n.level, "idx": n.index} for n in current]
    found = await tx.fetch(
        "line_texts",
        thread=thread,
        keys=[[n.agent, n.level, n.index] for n in current],
        key_agents=[n.agent for n in current],
        key_levels=[n.level for n in current],
        key_indexes=[n.index for n in current],
    )
    stems: dict[tuple[str, int, int], set[str]] = {}
    for r in found:
        made = line_stems(r["text"], r["since"], r["at"], language)
        stems.setdefault((r["agent"], r["level"], r["idx"]), set()).update(made)
    held = [
        (key, stems.get((n.agent, n.level, n.index))) for key, n in zip(keys, current, strict=True)
    ]
    await tx.executemany(
        "unpost", [unposted_row({**key, "line": True}, sorted(s)) for key, s in held if s]
    )
    await tx.executemany("unindex_line", keys)
    await index_lines(tx, thread, current, language)
    await post(tx, thread)


async def record_calls(tx: Transaction, thread: str, asks: Sequence[Ask], model: str) -> None:
    """Record conversations as the thread's next calls."""
    found = await tx.one("next_call", thread=thread)
    first = 0 if found is None else found["n"]
    await tx.executemany(
        "insert_call", [rows.call_row(ask, model, first + k) for k, ask in enumerate(asks)]
    )


async def carry_in(tx: Transaction, incoming: ThreadRecords, language: str, *, clear: bool) -> int:
    """Write what a load brings of names and generations (a replace first drops the thread's
    generations): what the store holds as it comes is skipped, and a generation or a name that
    contradicts the store is a ConflictError, so the load writes nothing. The rows written."""
    thread = incoming.thread
    if clear:
        await tx.execute("erase_generations", thread=thread)
    held = {(*g.key, g.generation): g for g in await read_generations(tx, thread)}
    new = []
    for g in incoming.generations:
        known = held.get((*g.key, g.generation))
        if known is None:
            new.append(g)
        elif (known.text, known.form, known.fallback) != (g.text, g.form, g.fallback):
            raise ConflictError(
                f"generation {g.generation} of node {(g.level, g.index)!r} of thread "
                f"{thread!r} is stored with another text",
                field="generation",
            )
    await tx.executemany("insert_generation", [generation_row(g) for g in new])
    names = {(n.thread, n.author): n.name for n in await read_names(tx, None)}
    given = [n for n in incoming.names if names.get((n.thread, n.author)) != n.name]
    for n in given:
        if (n.thread, n.author) in names:
            raise ConflictError(
                f"{n.author!r} is shown as {names[(n.thread, n.author)]!r} in the store, not "
                f"{n.name!r}",
                field="name",
            )
        await tx.execute("set_name", thread=n.thread, author=n.author, name=n.name)
    made, taken = await shown(tx, thread)
    if incoming.shown > (made, taken) or clear:
        await tx.execute(
            "set_generation_shown",
            thread=thread,
            made=max(made, incoming.shown[0]),
            shown=max(taken, incoming.shown[1]) if not clear else incoming.shown[1],
        )
    if new:
        newest = {g.key: g for g in sorted(incoming.generations, key=lambda g: g.generation)}
        nodes = {(n.agent, n.level, n.index): n for n in await _nodes(tx, thread)}
        current = [
            replace(nodes[key], text=g.text, bytes=g.bytes, fallback=g.fallback)
            for key, g in newest.items()
            if key in nodes
        ]
        await reindex(tx, thread, current, language)
    return len(new) + len(given)


async def _nodes(tx: Transaction, thread: str) -> list[Summary]:
    return [rows.summary_from_row(r) for r in await tx.fetch("summaries", thread=thread)]
