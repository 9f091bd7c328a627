"""What an agent is sent: the thread's outline, then its tail whole, as pydantic-ai messages.

    messages = await view(history, "t", agent="north")

The outline comes first, in blocks with marks for the provider's cache (`_outline`), then the
tail, every message after it from the log (`_tail`), then, when asked, a recall block of search
hits for the newest message (`lookup.recall_block`). Between cuts and folds, each view starts
with the bytes of the one before (`prompt_text`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic_ai.messages import (
    CachePoint,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponsePart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from .._checks import flag, whole, wrong
from .._names import display
from ..contract import Snapshot
from ..errors import ConfigurationError
from ..plugin import Reading
from ._outline import outline_parts
from ._tail import Run, merged, read_natives, tail_messages, unpaired
from .lookup import PAGE, checked, recall_block
from .steps import decode, paired_calls

__all__ = ("Run", "build", "prompt_text", "view")


async def view(
    history: Reading,
    thread: str,
    *,
    agent: str | None = None,
    block_lines: int | None = None,
    since: datetime | None = None,
    cache_point: bool = True,
    page: int = PAGE,
    recall: int = 0,
) -> list[ModelMessage]:
    """The thread's prompt for `agent`: its outline, then its tail whole.

    Args:
        history: an open History, or a ReadOnly store.
        thread: the thread; one with no messages gives an empty list.
        agent: whose view it is: its messages are responses, its steps tool calls and returns.
            None for nobody's: every message a user part, steps as text.
        block_lines: outline lines per `CompactionPart`; None (the default) closes a block once
            it holds an eighth of the outline's upper bound in bytes (`_outline.BLOCKS`).
        since: the window by age: only lines and messages with `at` from this instant on.
        cache_point: put a `CachePoint` after the outline (and after its closed blocks).
        page: a message over this many bytes is sent as its head, with a note to zoom.
        recall: at most this many tokens of search hits for the newest message from someone
            other than `agent`, appended after the tail (`recall_block`); 0 for none.
    """
    return await build(
        history,
        thread,
        agent=agent,
        block_lines=block_lines,
        since=since,
        cache_point=cache_point,
        page=page,
        recall=recall,
    )


async def build(
    history: Reading,
    thread: str,
    *,
    agent: str | None,
    block_lines: int | None,
    since: datetime | None,
    cache_point: bool,
    page: int,
    run: Run | None = None,
    recall: int = 0,
    snapshot: Snapshot | None = None,
) -> list[ModelMessage]:
    """`view`, where the requests of the messages `run` recorded carry its id (see `Run`); from
    `snapshot` when given (read for `agent`, maybe of an outline the thread had earlier), else
    from one read of the thread now (`Store.snapshot`)."""
    checked(history, thread, agent)
    _view_arguments(since=since, cache_point=cache_point, page=page)
    if block_lines is not None and block_lines < 1:
        raise ConfigurationError(f"block_lines must be at least 1, got {block_lines!r}")
    if isinstance(recall, bool) or not isinstance(recall, int) or recall < 0:
        raise ConfigurationError(f"recall must be a whole number of tokens >= 0, got {recall!r}")
    if snapshot is None:
        snapshot = await history.store.snapshot(thread, agent=agent)
    if snapshot is None:
        return []
    outline = snapshot.outline
    head: list[ModelMessage] = []
    parts = outline_parts(history.settings, snapshot, agent, block_lines, since, cache_point)
    if parts:
        head.append(ModelRequest(parts=parts))
    tail = list(snapshot.tail)
    tail = [s for s in (run.sees(tail) if run else tail) if since is None or s.message.at >= since]
    natives = {} if agent is None else read_natives(snapshot, agent, tail)
    steps = {
        s.message.id: step
        for s in tail
        if s.message.step
        and (agent is None or s.message.author == agent)
        and (step := decode(s.message.text))
    }
    # Nobody's view (agent None) pairs nothing: every step is text.
    paired = paired_calls(steps.values()) if agent is not None else set()
    names = display(snapshot.names, thread)
    while True:
        messages = tail_messages(tail, steps, paired, agent, page, natives, run, names)
        sent = merged([*head, *messages])
        # A result is sent as a tool part only in the request right after its call's response:
        # one that came later (after the agent spoke again) goes as text, with its call.
        apart = unpaired(sent) & paired
        if not apart:
            break
        paired -= apart
    newest = next(
        (s for s in reversed(tail) if not s.message.step and s.message.author != agent), None
    )
    if recall and newest is not None:
        block = await recall_block(
            history,
            thread,
            newest.message.text,
            agent=agent,
            budget=recall,
            whole=outline.boundary,
        )
        if block:
            at = newest.message.at
            sent = merged(
                [*sent, ModelRequest(parts=[UserPromptPart(content=block, timestamp=at)])]
            )
    return sent


def _view_arguments(*, since: object, cache_point: object, page: object) -> None:
    if since is not None and (not isinstance(since, datetime) or since.utcoffset() is None):
        wrong("since", since, "a timezone-aware datetime or None")
    flag("cache_point", cache_point)
    whole("page", page, low=4)


def prompt_text(messages: Iterable[ModelMessage]) -> str:
    """Messages as plain text, one block per part: appending parts appends text."""
    out: list[str] = []
    for message in messages:
        for part in message.parts:
            out.append(_part_text(part))
    return "".join(out)


def _part_text(part: ModelRequestPart | ModelResponsePart) -> str:
    if isinstance(part, CompactionPart):
        return f"[outline]\n{part.content or ''}\n"
    if isinstance(part, UserPromptPart):
        if isinstance(part.content, str):
            return f"[user]\n{part.content}\n"
        items = [i for i in part.content if not isinstance(i, CachePoint)]
        text = "".join(i if isinstance(i, str) else f"[{i.kind}]" for i in items)
        return f"[user]\n{text}\n" if items else ""
    if isinstance(part, SystemPromptPart):
        return f"[system]\n{part.content}\n"
    if isinstance(part, TextPart):
        return f"[assistant]\n{part.content}\n"
    if isinstance(part, ToolCallPart):
        return f"[tool call {part.tool_call_id}] {part.tool_name} {part.args_as_json_str()}\n"
    if isinstance(part, ToolReturnPart):
        return f"[tool return {part.tool_call_id}] {part.tool_name}\n{part.model_response_str()}\n"
    if isinstance(part, RetryFeedbackPart):
        return f"[feedback]\n{part.model_response()}\n"
    return f"[{part.part_kind}]\n"
