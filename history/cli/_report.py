"""What the inspecting commands show: a thread's figures, its tree, outline and tail, with rich.

The figures are read from a store; the drawings are rich renderables, so the command line
decides where they are printed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .._generations import current_numbers, current_snapshot
from ..contract import NodeKey, Snapshot, Stored, Summary, format_at
from ..errors import InputError, NotFoundError
from ..lines import label, line_of
from ..settings import listed
from ..store import Store
from ._output import counted

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text
    from rich.tree import Tree


@dataclass(frozen=True, kw_only=True)
class Figures:
    """One thread at a glance."""

    thread: str
    title: str | None
    """What people call it (a ChatGPT conversation's title), if it has a name."""
    messages: int
    """Stored messages, shared and steps."""
    pending: int
    """Stored but not processed yet (processing catches up when the plugin is next opened)."""
    nodes: int
    """Lines written: every node of the tree."""
    depth: int
    """Levels of the tree: 0 before the first cut, 1 with lines only, 2 with pairs merged, ..."""
    lines: int
    """Lines in the outline: what an agent is sent in place of the old messages."""
    bytes: int
    """The outline's size."""
    tail: int
    """Messages still whole."""
    tokens: int
    """The tail's weight."""


def figures(snap: Snapshot) -> Figures:
    """One thread at a glance, from a snapshot of it (its tree need not be read): lines merge as
    soon as their pair is written (SPEC section 6), so a tree over `n` lines has
    `2n - popcount(n)` nodes in `n.bit_length()` levels."""
    o, n = snap.outline, snap.outline.boundary
    pending = len(snap.tail) - len(o.tail)
    return Figures(
        thread=o.thread,
        title=snap.about.title if snap.about else None,
        messages=o.position + 1 + pending,
        pending=pending,
        nodes=2 * n - n.bit_count(),
        depth=n.bit_length(),
        lines=len(o.lines),
        bytes=o.bytes,
        tail=len(snap.tail),
        tokens=o.tokens + sum(s.weight for s in snap.tail[len(o.tail) :]),
    )


async def snapshot(store: Store, thread: str) -> Snapshot:
    """Read a thread with its whole tree, in one transaction; NotFoundError when the store holds
    no message of it."""
    snap = await store.snapshot(thread, tree=True)
    if snap is None:
        raise NotFoundError(f"no thread {thread!r} in {store.url!r}")
    return current_snapshot(snap)


async def resolve(store: Store, name: str, *, exact: bool = False) -> str:
    """The thread a name on the command line means: a thread's id, else the one thread whose
    title it is (case aside), else the one whose title holds it. `exact`, for the commands
    that change or delete a thread: its id, else the one thread whose title it is exactly.

    Raises:
        InputError: an empty name (an unset shell variable, say), which every title holds.
        NotFoundError: no thread has that id or title; or the title is several threads', named
            with their ids, so that one can be chosen.
    """
    if not name.strip():
        raise InputError(f"name a thread by its id or title, got {name!r}", field="thread")
    if await store.outline(name) is not None:
        return name
    known = [about for about in await store.about() if about.title is not None]
    if exact:
        found = [a for a in known if a.title == name]
    else:
        wanted = name.casefold()
        found = [a for a in known if a.title is not None and a.title.casefold() == wanted]
        found = found or [a for a in known if a.title is not None and wanted in a.title.casefold()]
    if len(found) == 1:
        return found[0].thread
    if not found:
        raise NotFoundError(f"no thread {name!r} in {store.url!r}")
    listed = "; ".join(f"{a.thread} ({a.title})" for a in found[:10])
    more = f"; and {len(found) - 10} more" if len(found) > 10 else ""
    raise NotFoundError(
        f"{name!r} names {len(found)} threads by their titles: {listed}{more}; give its id"
    )


def matches(figures: Figures, text: str) -> bool:
    """Whether a thread's id or title holds `text`, case aside (`threads --match`)."""
    wanted = text.casefold()
    return wanted in figures.thread.casefold() or wanted in (figures.title or "").casefold()


def fallbacks(snap: Snapshot) -> int:
    """The thread's lines written while the summarizer failed (the cut of their input), its
    steps' too."""
    return sum(n.fallback for n in (*snap.nodes, *snap.steps))


def threads_table(figures: Sequence[Figures], fallbacks: Mapping[str, int] | None = None) -> Table:
    """The `threads` table; `fallbacks`: each thread's lines that fell back, shown beside its
    lines when there are some."""
    from rich.table import Table
    from rich.text import Text

    table = Table(
        caption="lines: the tree's nodes, in depth levels; outline: the lines agents are sent, "
        "and their bytes; tail: the messages sent whole, and their tokens",
        caption_justify="left",
    )
    table.add_column("thread", overflow="fold")
    for name in ("messages", "lines", "depth", "outline", "bytes", "tail", "tokens"):
        table.add_column(name, justify="right")
    for f in figures:
        messages = f"{f.messages}" + (f" ({f.pending} pending)" if f.pending else "")
        cut = (fallbacks or {}).get(f.thread, 0)
        nodes = f"{f.nodes}" + (f" ({cut} fallback)" if cut else "")
        # A title is what a person knows the thread by; its id, under it, is what to type.
        thread = Text.assemble((f.title, "bold"), "\n", f.thread) if f.title else Text(f.thread)
        table.add_row(
            thread,
            messages,
            nodes,
            str(f.depth),
            str(f.lines),
            str(f.bytes),
            str(f.tail),
            str(f.tokens),
        )
    return table


def tree(snap: Snapshot, *, depth: int | None = None) -> Tree:
    """The summary tree: its top nodes oldest first, each over its two halves.

    Nodes in the outline are marked `▶`. `depth` limits how many levels are drawn under each
    top node.
    """
    from rich.text import Text
    from rich.tree import Tree

    nodes = {(n.level, n.index): n for n in snap.nodes}
    shown = {(level, index) for level, index, _, _ in snap.outline.lines}
    f = figures(snap)
    titled = f" “{f.title}”" if f.title else ""
    root = Tree(
        Text(
            f"{f.thread}{titled}: {counted(f.messages, 'message')}, {counted(f.nodes, 'line')} in "
            f"{counted(f.depth, 'level')}; ▶ marks the {counted(f.lines, 'line')} of the outline",
            style="bold",
        )
    )
    tops = [n for n in nodes.values() if (n.level + 1, n.index // 2) not in nodes]
    tops.sort(key=lambda n: n.index * 2**n.level)

    def add(parent: Tree, node: Summary, room: int | None) -> None:
        mark = "▶ " if (node.level, node.index) in shown else "  "
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(mark, style="bold green")
        text.append(f"{node.label:>9}  ", style="cyan")
        text.append(node.text.replace("\n", " ⏎ "), style="bold" if mark.strip() else "")
        branch = parent.add(text)
        if node.level == 0 or room == 0:
            return
        for index in (2 * node.index, 2 * node.index + 1):
            child = nodes.get((node.level - 1, index))
            if child is not None:
                add(branch, child, None if room is None else room - 1)

    for top in tops:
        add(root, top, depth)
    if not tops:
        root.add(Text("no lines yet: the tail has never been cut", style="dim"))
    return root


def outline_table(snap: Snapshot) -> RenderableType:
    """The outline: the lines an agent is sent in place of the messages that left the tail."""
    from rich.text import Text

    o = snap.outline
    if not o.lines:
        return Text("outline: empty (never cut: agents are sent every message whole)")
    nodes = {(n.level, n.index): n for n in snap.nodes}
    title = f"outline: {len(o.lines)} lines, {o.bytes} bytes, for messages 0 to {o.boundary - 1}"
    table = _lines_table(title)
    for level, index, size, at in o.lines:
        node = nodes.get((level, index))
        table.add_row(
            label(level, index), str(size), format_at(at)[:16], node.text if node else "?"
        )
    return table


def _lines_table(title: str) -> Table:
    """An outline's table, its rows to add: each line's label, bytes, last instant and text."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("node", style="cyan", justify="right", no_wrap=True)
    table.add_column("bytes", justify="right")
    table.add_column("until", no_wrap=True)
    table.add_column("line", overflow="fold")
    return table


def step_tables(snap: Snapshot) -> list[RenderableType]:
    """Each agent's step outline: the lines only that agent is sent for its steps that left."""
    nodes = {(n.agent, n.level, n.index): n for n in snap.steps}
    tables: list[RenderableType] = []
    for agent, o in sorted(snap.outline.steps.items()):
        title = (
            f"{agent}'s step outline: {len(o.lines)} lines, {o.bytes} bytes, for its steps 0 to "
            f"{o.boundary - 1}"
        )
        table = _lines_table(title)
        for level, index, size, at in o.lines:
            node = nodes.get((agent, level, index))
            table.add_row(
                label(level, index, agent=agent),
                str(size),
                format_at(at)[:16],
                node.text if node else "?",
            )
        tables.append(table)
    return tables


def tail_table(snap: Snapshot) -> Table:
    """The messages still whole, oldest first."""
    from rich.table import Table
    from rich.text import Text

    f = figures(snap)
    table = Table(title=f"tail: {f.tail} messages whole, {f.tokens} tokens", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("message")
    for stored in snap.tail:
        number = "step" if stored.index is None else str(stored.index)
        text = Text(line_of(stored.message), no_wrap=True, overflow="ellipsis")
        table.add_row(number, str(stored.weight), text)
    return table


def built(snap: Snapshot) -> Text:
    """The settings the thread was built with, as recorded when it was first processed."""
    from rich.text import Text

    record = snap.about.settings if snap.about else None
    if record is None:
        return Text("built with: not recorded (first processed before settings were kept)")
    return Text(f"built with: {listed(json.loads(record))}", style="dim")


def show(snap: Snapshot, *, depth: int | None = None) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    steps = [part for table in step_tables(snap) for part in (table, Text())]
    return Group(
        tree(snap, depth=depth),
        Text(),
        built(snap),
        Text(),
        outline_table(snap),
        Text(),
        *steps,
        tail_table(snap),
    )


def show_json(snap: Snapshot) -> dict[str, Any]:
    """`show --json`: the figures, every node (oldest first, lowest level first), the outline's
    lines and the messages sent whole."""
    shown = {(level, index) for level, index, _, _ in snap.outline.lines}
    nodes = {(n.level, n.index): n for n in snap.nodes}
    steps = {(n.agent, n.level, n.index): n for n in snap.steps}
    generation = current_numbers(snap)
    return {
        "thread": snap.outline.thread,
        "title": figures(snap).title,
        "settings": json.loads(snap.about.settings) if snap.about and snap.about.settings else None,
        "figures": asdict(figures(snap)) | {"fallbacks": fallbacks(snap)},
        "nodes": [
            {
                "label": n.label,
                "level": n.level,
                "index": n.index,
                "text": n.text,
                "bytes": n.bytes,
                "at": format_at(n.at),
                "outline": (n.level, n.index) in shown,
                "generation": generation.get(NodeKey("", n.level, n.index), 0),
            }
            for n in sorted(snap.nodes, key=lambda n: (n.index * 2**n.level, n.level))
        ],
        "outline": [
            {
                "label": label(level, index),
                "bytes": size,
                "at": format_at(at),
                "text": node.text if (node := nodes.get((level, index))) else None,
            }
            for level, index, size, at in snap.outline.lines
        ],
        "steps": {
            agent: {
                "bytes": o.bytes,
                "boundary": o.boundary,
                "lines": [
                    {
                        "label": label(level, index, agent=agent),
                        "bytes": size,
                        "at": format_at(at),
                        "text": node.text if (node := steps.get((agent, level, index))) else None,
                    }
                    for level, index, size, at in o.lines
                ],
            }
            for agent, o in sorted(snap.outline.steps.items())
        },
        "tail": [stored_json(s) for s in snap.tail],
    }


def stored_json(s: Stored) -> dict[str, Any]:
    """A stored message as `show --json`'s tail and `messages --json` print it."""
    m = s.message
    return {
        "index": s.index,
        "seq": s.seq,
        "id": m.id,
        "author": m.author,
        "to": m.to,
        "at": format_at(m.at),
        "step": m.step,
        "tokens": s.weight,
        "text": m.text,
        "files": [f.to_json() for f in m.files],
    }
