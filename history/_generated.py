"""The data of display names and generations (docs/generations.md), shared by the store and
the plugin: a node's later texts, and an author's display name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .contract import NodeKey

Form = Literal["line", "join", "model"]
"""How a node's text was made: `line`, a message's line rendered whole; `join`, its children's
texts joined; `model`, written by the summarizer (docs/generations.md, section 1)."""


@dataclass(frozen=True, kw_only=True)
class Generation:
    """A node's text after its first: made by a rename or a re-summary (docs/generations.md).
    Generation 0 is the `Summary` the processor wrote; the newest is the node's current text."""

    thread: str
    agent: str
    """`""` for the shared tree; the agent whose step tree holds the node otherwise."""
    level: int
    index: int
    generation: int
    """1, 2, ... in the order the node's texts were made."""
    text: str
    bytes: int
    form: Form
    fallback: bool = False
    """Its text is a fallback (a re-summary whose ask kept failing)."""
    made: int = 0
    """The number of the thread's change that wrote it (1, 2, ...)."""

    @property
    def key(self) -> NodeKey:
        return NodeKey(self.agent, self.level, self.index)


@dataclass(frozen=True, kw_only=True)
class Name:
    """A display name for an author: store-wide (`thread` `""`) or in one thread."""

    thread: str
    author: str
    name: str
