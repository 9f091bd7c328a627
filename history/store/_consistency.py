"""What a thread's records must agree on before a load writes them (SPEC sections 4 and 5).

A load takes records from a file anyone may have edited. Before one row is written, the thread
as it would then be stored (what the store holds, with what comes in) is checked whole, and the
first contradiction is refused with an InputError naming the record: a later processing, view
or rebuild can then rely on what it reads.

- messages: seqs 0, 1, 2, ... with no gap; the shared ones numbered 0, 1, 2, ... in seq order,
  steps with no index, each agent's steps numbered 0, 1, 2, ... (their step index); a weight
  from 0 to what the message could weigh at most (read from a file, `check_weight`: exactly
  what its text and files weigh);
- nodes: a level-0 node names the message with its index (its step index, in an agent's step
  tree); a node covers messages that exist; its bytes are its text's;
- the outline: its lines name stored nodes, with their bytes, and cover the shared messages
  before `boundary` in order; its tail is the thread's messages from where it starts to
  `position`, as stored; `bytes`, `tokens`, `boundary` and `since` are what those make; each
  agent's step outline likewise over its steps that left (from its first line on: steps that
  left before step trees keep no line);
- calls: their numbers in range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..contract import Outline, Stored, Summary
from ..errors import InputError
from ..lines import label, render, size

if TYPE_CHECKING:
    from ._records import RecordedCall

LARGEST = 2**63 - 1
"""The largest number a store's columns hold."""
TOP_LEVEL = 62
"""No thread holds 2**63 messages: a node above this level cannot exist."""


def check_thread(
    thread: str,
    messages: Sequence[Stored],
    summaries: Sequence[Summary],
    outline: Outline | None,
    calls: Sequence[RecordedCall],
) -> None:
    """Refuse a thread whose records disagree, naming the first record at fault.

    Args:
        messages: every message of the thread, in seq order.
        summaries: every node of the thread.
        outline: the outline to be stored; None for one a load makes fresh.
        calls: the calls to be written.

    Raises:
        InputError: the first contradiction, naming the record and what it contradicts.
    """
    trees = _check_messages(thread, messages)
    nodes = _check_nodes(thread, summaries, trees)
    if outline is not None:
        _check_outline(outline, messages, nodes)
        _check_steps(outline, messages, nodes)
    for call in calls:
        ask = call.ask
        for name, value in (
            ("n", call.n),
            ("level", ask.level),
            ("index", ask.index),
            ("input_tokens", ask.input_tokens),
            ("output_tokens", ask.output_tokens),
        ):
            _in_range(f"call {call.key[:16]!r} of thread {thread!r}", name, value, 0, LARGEST)


def check_weight(stored: Stored, encoding_name: str) -> None:
    """Refuse a message whose weight is not what its text and files weigh in `encoding_name`,
    the tiktoken encoding its thread was built with: a view trusts the stored weight, so a text
    swapped for a longer one would be sent whole past every budget."""
    from ..processors.weight import weight  # tiktoken only for a load

    m = stored.message
    due = weight(m, encoding_name)
    if stored.weight != due:
        raise InputError(
            f"message {m.id!r} of thread {m.thread!r} has weight {stored.weight}, but its text "
            f"and files weigh {due} tokens ({encoding_name}): was its text changed?",
            field="weight",
        )


def _check_messages(thread: str, messages: Sequence[Stored]) -> dict[str, list[Stored]]:
    """The messages of each tree by their place in it (`""`: the shared messages by index; an
    agent: its steps by step index), once every message has its place and a likely weight."""
    from ..processors.weight import MESSAGE_OVERHEAD, file_tokens  # tiktoken only for a load

    trees: dict[str, list[Stored]] = {"": []}
    shared = trees[""]
    for seq, s in enumerate(messages):
        m = s.message
        what = f"message {m.id!r} of thread {thread!r}"
        if s.seq != seq:
            raise InputError(
                f"{what} has seq {s.seq}, where seq {seq} is due: a thread's seqs run 0, 1, 2, "
                "... with no gap",
                field="seq",
            )
        due = None if m.step else len(shared)
        if s.index != due:
            kind = "a step, which has no index" if m.step else f"shared message {due}"
            raise InputError(f"{what} has index {s.index!r}, but it is {kind}", field="index")
        if m.step:
            steps = trees.setdefault(m.author, [])
            if s.step_index not in (None, len(steps)):
                raise InputError(
                    f"{what} has step index {s.step_index!r}, but it is step {len(steps)} of "
                    f"{m.author!r}",
                    field="step_index",
                )
            steps.append(s)
        elif s.step_index is not None:
            raise InputError(f"{what} is shared and has a step index", field="step_index")
        most = size(render(m)) + MESSAGE_OVERHEAD + sum(file_tokens(f) for f in m.files)
        _in_range(what, "weight", s.weight, 0, most)
        if not m.step:
            shared.append(s)
    return trees


def _check_nodes(
    thread: str, summaries: Sequence[Summary], trees: dict[str, list[Stored]]
) -> dict[tuple[str, int, int], Summary]:
    nodes: dict[tuple[str, int, int], Summary] = {}
    for node in summaries:
        _in_range(f"a node of thread {thread!r}", "level", node.level, 0, TOP_LEVEL)
        name = label(node.level, node.index, agent=node.agent)
        what = f"node {name} (level {node.level}) of thread {thread!r}"
        _in_range(what, "index", node.index, 0, LARGEST)
        span = 2**node.level
        covered = trees.get(node.agent, [])
        kind = f"steps of {node.agent!r}" if node.agent else "shared messages"
        if (node.index + 1) * span > len(covered):
            raise InputError(
                f"{what} covers {kind} {node.index * span} to "
                f"{(node.index + 1) * span - 1}, but the thread has {len(covered)}",
                field="summary",
            )
        named = covered[node.index].message.id if node.level == 0 else None
        if node.message != named:
            raise InputError(
                f"{what} names message {node.message!r}, not {named!r}", field="summary"
            )
        if node.bytes != size(node.text):
            raise InputError(
                f"{what} has bytes {node.bytes}, not the size of its text ({size(node.text)})",
                field="bytes",
            )
        nodes[(node.agent, node.level, node.index)] = node
    return nodes


def _check_outline(
    outline: Outline,
    messages: Sequence[Stored],
    nodes: dict[tuple[str, int, int], Summary],
) -> None:
    what = f"the outline of thread {outline.thread!r}"
    _in_range(what, "position", outline.position, -1, len(messages) - 1)
    _in_range(what, "floor", outline.floor, 0, LARGEST)
    covered = 0
    for level, index, bytes, _ in outline.lines:
        node = nodes.get(("", level, index))
        if node is None:
            raise InputError(
                f"{what} has line {label(level, index)} (level {level}), a node the thread "
                "does not have",
                field="outline",
            )
        if index * 2**level != covered or node.bytes != bytes:
            raise InputError(
                f"{what} has line {label(level, index)} (level {level}, {bytes} bytes) where "
                f"the line of shared message {covered} on is due, with its node's bytes",
                field="outline",
            )
        covered += 2**level
    _equal(what, "bytes", outline.bytes, sum(entry[2] + 1 for entry in outline.lines))
    tail = list(outline.tail)
    start = outline.tail_start
    if not tail and outline.position >= 0:
        raise InputError(f"{what} has an empty tail at position {outline.position}", field="tail")
    for seq, item in enumerate(tail, start=start):
        stored = messages[seq].tail_item() if 0 <= seq <= outline.position else None
        if item != stored:
            raise InputError(
                f"{what} has {item!r} in its tail where {stored!r} is due: the tail is the "
                f"thread's messages as stored, from seq {start} to position {outline.position}",
                field="tail",
            )
    if tail and tail[-1].seq != outline.position:
        raise InputError(
            f"{what} has a tail ending at seq {tail[-1].seq}, not at its position "
            f"{outline.position}",
            field="tail",
        )
    _equal(what, "tokens", outline.tokens, sum(item.weight for item in tail))
    _equal(what, "boundary", outline.boundary, sum(not s.message.step for s in messages[:start]))
    if covered != outline.boundary:
        raise InputError(
            f"{what} has lines for shared messages 0 to {covered - 1}, not up to its boundary "
            f"{outline.boundary}",
            field="outline",
        )
    if tail and outline.since != tail[0].at:
        raise InputError(f"{what} has since {outline.since}, not {tail[0].at}", field="since")


def _check_steps(
    outline: Outline, messages: Sequence[Stored], nodes: dict[tuple[str, int, int], Summary]
) -> None:
    start = outline.tail_start
    for agent, steps in outline.steps.items():
        what = f"the step outline of {agent!r} in thread {outline.thread!r}"
        left = sum(s.message.step and s.message.author == agent for s in messages[:start])
        _equal(what, "boundary", steps.boundary, left)
        covered = steps.lines[0][1] * 2 ** steps.lines[0][0] if steps.lines else steps.boundary
        for level, index, bytes, _ in steps.lines:
            node = nodes.get((agent, level, index))
            name = label(level, index, agent=agent)
            if node is None or node.bytes != bytes or index * 2**level != covered:
                raise InputError(
                    f"{what} has line {name} (level {level}, {bytes} bytes) where a node of its "
                    f"step tree from step {covered} on is due, with its bytes",
                    field="outline",
                )
            covered += 2**level
        if covered != steps.boundary:
            raise InputError(
                f"{what} has lines up to step {covered - 1}, not up to its boundary "
                f"{steps.boundary}",
                field="outline",
            )
        _equal(what, "bytes", steps.bytes, sum(entry[2] + 1 for entry in steps.lines))


def _in_range(what: str, name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise InputError(f"{what} has {name} {value}, out of range ({low} to {high})", field=name)


def _equal(what: str, name: str, value: int, due: int) -> None:
    if value != due:
        raise InputError(f"{what} has {name} {value}, where its records make {due}", field=name)
