"""A node as it read in an earlier generation (docs/generations.md): `zoom --generation N`."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NotFoundError
from ..generated import Form
from ..generations import tree
from ..plugin import History
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


async def version(
    history: History, thread: str, label: str, generation: int, *, agent: str | None = None
) -> Version:
    """Node `label` of `thread` as it read in `generation`; a NotFoundError names the numbers
    it has when it has no such generation."""
    step = label.strip().startswith("s")
    if step and not agent:
        raise NotFoundError(f"{label.strip()!r} is a step label: name its agent")
    _, level, index = parse_label(thread, label.strip().removeprefix("s"))
    key = (agent if step and agent else "", level, index)
    found = await tree(history.store, thread)
    if key not in found.nodes:
        raise NotFoundError(f"no line {label!r} in thread {thread!r}")
    numbers = tuple(found.numbers(key))
    shown = found.text(key, generation)
    if shown is None:
        raise NotFoundError(
            f"line {label!r} of thread {thread!r} has no generation {generation!r}: it has "
            f"{', '.join(map(str, numbers))}"
        )
    return Version(
        label=found.nodes[key].label, level=level, index=index, generation=generation,
        generations=numbers, text=shown.text, form=shown.form, fallback=shown.fallback,
    )  # fmt: skip
