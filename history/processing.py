"""What the core and the processors exchange besides the contract's data.

The processors (`processors/`) are pure: they move an outline forward and never open a
transaction or call a model. The core (`history._lane`) hands them callbacks to write a line
and to read messages and nodes, and commits what they changed. This module types that seam:
the callbacks, what a processor hands back (`Change`), and `Vanished`, which a processor raises
when the thread was erased under it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .contract import Ask, Stored, Summary, Task
from .contract import NodeKey as NodeKey  # the key the node readers take, named here too

LineWriter = Callable[[Task], Awaitable[Ask]]
"""Writes the line for a task: asks the summarizer, retries, cuts; the finished conversation."""
MessageReader = Callable[[str], Awaitable[Stored | None]]
"""Reads a stored message by id; None when it is gone."""
NodeReader = Callable[[str, int, int], Awaitable[Summary | None]]
"""Reads a stored node by `(agent, level, index)`; agent `""` is the shared tree."""
ManyReader = Callable[[str, list[tuple[int, int]]], Awaitable[list[Summary]]]
"""Reads the nodes of one tree (an agent's, `""` for the shared one) at some keys at once."""


@dataclass(frozen=True, kw_only=True)
class Change:
    """What processing one message did to its thread's outline."""

    cut: bool
    """At least one message left the tail."""
    folded: bool
    """At least one pair of lines merged into its parent."""


class Vanished(Exception):
    """A message the outline names is gone: the thread was erased under the batch."""
