"""A node's generations (docs/generations.md): `zoom --generation N`, and the viewer's list of
what a line read before."""

from __future__ import annotations

from dataclasses import dataclass

from .._generated import Form
from .._generations import Tree
from ..contract import NodeKey
from ..errors import NotFoundError
from ..plugin import Reading
from ..reconsolidating import parse_label


@dataclass(frozen=True, kw_only=True)
class Version:
    """One generation of a node."""

    label: str
    level: int
    index: int
    generation: int
    generations: tuple[int, ...]
    """The numbers of every generation it has, oldest first; the last is its current one."""
    text: str
    form: Form
    """How the text was made: `line`, `join` or `model`."""
    fallback: bool


async def versions(
    history: Reading, thread: str, label: str, *, agent: str | None = None
) -> tuple[Version, ...]:
    """Every generation of node `label` of `thread`, oldest first; a NotFoundError when there is
    no such node. A step label (`s4+2`) is a node of `agent`'s step tree."""
    step = label.strip().startswith("s")
    if step and not agent:
        raise NotFoundError(f"{label.strip()!r} is a step label: name its agent")
    _, level, index = parse_label(thread, label.strip().removeprefix("s"))
    tree = agent if step and agent else ""
    store = history.store
    node = await store.summary(thread, level, index, agent=tree)
    if node is None:
        raise NotFoundError(f"no line {label!r} in thread {thread!r}")
    key = NodeKey(tree, level, index)
    later = [g for g in await store.generations(thread) if g.key == key]
    stored = None if node.message is None else await store.message(node.message)
    found = Tree([node], later, {} if stored is None else {stored.message.id: stored.message})
    numbers = tuple(found.numbers(key))
    return tuple(
        Version(
            label=node.label,
            level=level,
            index=index,
            generation=n,
            generations=numbers,
            text=text.text,
            form=text.form,
            fallback=text.fallback,
        )
        for n in numbers
        if (text := found.text(key, n)) is not None
    )


async def version(
    history: Reading, thread: str, label: str, generation: int, *, agent: str | None = None
) -> Version:
    """Node `label` of `thread` as it read in `generation`; a NotFoundError names the numbers
    it has when it has no such generation."""
    found = await versions(history, thread, label, agent=agent)
    chosen = next((v for v in found if v.generation == generation), None)
    if chosen is None:
        numbers = ", ".join(str(v.generation) for v in found)
        raise NotFoundError(
            f"line {label!r} of thread {thread!r} has no generation {generation!r}: it has "
            f"{numbers}"
        )
    return chosen
