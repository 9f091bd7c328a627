"""What an agent is sent: the thread's outline, then its tail whole, as pydantic-ai messages.

    messages = await view(history, "t", agent="north")

The outline comes first: one `CompactionPart` per block of `block_lines` lines, each line
`{label}|{text}` (newlines as spaces), oldest first, then a `CachePoint`. Appending lines leaves
the full blocks byte-identical, so a provider that caches whole blocks keeps hitting. The tail
follows, from the log: the outline's committed tail and every message stored after it, so a view
taken while processing is behind misses nothing. The agent's own messages are its responses,
sent as its provider sent them when they were stored with that form (reasoning items, thinking
signatures, item and call ids: see `History.message_created`'s `native`), so the next request
starts with the whole of the last one;
everyone else's are user parts naming who wrote them; the agent's steps are its tool calls and
returns (see `history.agent.steps`), and a call or return whose partner is not in view, or not right
next to it, is plain text, since providers refuse a lone tool part. Other agents' steps are
private to them and left out.

Between cuts and folds, each view starts with the bytes of the one before (`prompt_text`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic_ai.messages import (
    CachePoint,
    CompactionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..asking import describe
from ..contract import Entry, Hit, Outline, Stored
from ..errors import ConfigurationError
from ..lines import label, one_line, prefix, render, size
from ..plugin import History
from ..processors.weight import tokens
from .lookup import PAGE, Zoom, search, zoom
from .steps import Calls, Returns, Step, cut_text, decode, paired_calls, step_messages

if TYPE_CHECKING:
    from .providers import Sent

__all__ = (
    "PAGE",
    "Hit",
    "Rendered",
    "Zoom",
    "prompt_text",
    "recall_block",
    "render_view",
    "search",
    "view",
    "zoom",
)

log = logging.getLogger(__name__)

RECALL_HITS = 10
"""Hits the recall block draws from, the best first."""
BLOCK_LINES = 32
"""Outline lines per block: the unit a provider's prompt cache matches."""
BATCH = 256


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """A view as plain text: what the `prompt` command shows and the benchmarks measure."""

    text: str
    tokens: int
    """Its tokens, with the thread's tokenizer."""
    bytes: int
    """Its size in UTF-8 bytes."""
    request: Sent | None = None
    """The request a named provider would receive (`render_view`'s `model`)."""


async def view(
    history: History,
    thread: str,
    *,
    agent: str | None = None,
    block_lines: int = BLOCK_LINES,
    since: datetime | None = None,
    cache_point: bool = True,
    page: int = PAGE,
    recall: int = 0,
) -> list[ModelMessage]:
    """The thread's prompt for `agent`: its outline, then its tail whole.

    Args:
        history: an open History.
        thread: the thread; one with no messages gives an empty list.
        agent: whose view it is: its messages are responses, its steps tool calls and returns.
            None for nobody's: every message a user part, steps as text.
        block_lines: outline lines per `CompactionPart`.
        since: the window by age: only lines and messages with `at` from this instant on.
        cache_point: put a `CachePoint` after the outline (and after its last full block).
        page: a message over this many bytes is sent as its head, with a note to zoom.
        recall: at most this many tokens of search hits for the newest message from someone
            other than `agent`, appended after the tail (`recall_block`); 0 for none.
    """
    return await build(
        history, thread, agent=agent, block_lines=block_lines, since=since,
        cache_point=cache_point, page=page, recall=recall,
    )  # fmt: skip


async def render_view(
    history: History,
    thread: str,
    *,
    agent: str | None = None,
    block_lines: int = BLOCK_LINES,
    since: datetime | None = None,
    model: str | None = None,
) -> Rendered:
    """The view as plain text, with its tokens and bytes.

    With `model` (`"openai:gpt-5.6"`, `"anthropic:claude-sonnet-4-5"`, `"openai-chat:..."`), also
    the request that model's provider would receive from the agent at its next turn, sized, as
    `history.agent.providers.provider_request` records it offline (the whole view: `since` narrows
    the text only).
    """
    messages = await view(history, thread, agent=agent, block_lines=block_lines, since=since)
    text = prompt_text(messages)
    request = None
    if model is not None:
        from .providers import provider_request  # it runs an agent, which reads this module

        request = await provider_request(
            history, thread, model, agent=agent or "assistant", block_lines=block_lines
        )
    return Rendered(
        text=text, tokens=tokens(text, history.settings.encoding), bytes=size(text),
        request=request,
    )  # fmt: skip


async def build(
    history: History,
    thread: str,
    *,
    agent: str | None,
    block_lines: int,
    since: datetime | None,
    cache_point: bool,
    page: int,
    run: Run | None = None,
    recall: int = 0,
) -> list[ModelMessage]:
    """`view`, where the requests of the messages `run` recorded carry its id (see `Run`)."""
    if block_lines < 1:
        raise ConfigurationError(f"block_lines must be at least 1, got {block_lines!r}")
    if isinstance(recall, bool) or not isinstance(recall, int) or recall < 0:
        raise ConfigurationError(f"recall must be a whole number of tokens >= 0, got {recall!r}")
    outline = await history.store.outline(thread)
    if outline is None:
        return []
    head: list[ModelMessage] = []
    outline_parts = await _outline_parts(history, outline, agent, block_lines, since, cache_point)
    if outline_parts:
        head.append(ModelRequest(parts=outline_parts))
    after = _tail_after(outline)
    tail = [s for s in await _tail(history, outline) if since is None or s.message.at >= since]
    natives = {} if agent is None else await _natives(history, thread, after, agent, tail)
    steps = {
        s.message.id: step
        for s in tail
        if s.message.step
        and (agent is None or s.message.author == agent)
        and (step := decode(s.message.text))
    }
    # Nobody's view (agent None) pairs nothing: every step is text.
    paired = paired_calls(steps.values()) if agent is not None else set()
    while True:
        messages = _tail_messages(tail, steps, paired, agent, page, natives, run)
        sent = _merged([*head, *messages])
        # A result is sent as a tool part only in the request right after its call's response:
        # one that came later (after the agent spoke again) goes as text, with its call.
        apart = _apart(sent) & paired
        if not apart:
            break
        paired -= apart
    newest = next(
        (s for s in reversed(tail) if not s.message.step and s.message.author != agent), None
    )
    if recall and newest is not None:
        block = await recall_block(
            history, thread, newest.message.text, agent=agent, budget=recall,
            whole=outline.boundary,
        )  # fmt: skip
        if block:
            at = newest.message.at
            sent = _merged(
                [*sent, ModelRequest(parts=[UserPromptPart(content=block, timestamp=at)])]
            )
    return sent


RECALL_HEADER = "Earlier in this conversation, found for the newest message (label|text):"


async def recall_block(
    history: History,
    thread: str,
    query: str,
    *,
    agent: str | None,
    budget: int,
    whole: int,
) -> str:
    """The best search hits for `query` as `{label}|{text}` lines under `RECALL_HEADER`, as
    many as fit `budget` tokens (the header included); hits on messages from index `whole` on,
    which the tail holds whole, are left out. Empty when nothing fits or nothing is found."""
    encoding = history.settings.encoding
    lines = [RECALL_HEADER]
    used = tokens(RECALL_HEADER, encoding)
    for hit in await search(history, thread, query, limit=RECALL_HITS, agent=agent):
        if hit.index << hit.level >= whole:
            continue
        line = f"{hit.label}|{hit.text}"
        cost = tokens(line, encoding) + 1
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""


@dataclass(frozen=True, kw_only=True)
class Run:
    """An agent's run, for the view it is sent: the requests of the messages it recorded (its
    prompt) carry its id, so pydantic-ai counts them among the run's new messages."""

    id: str
    recorded: frozenset[str]
    """Ids of the messages the run recorded."""


async def _natives(
    history: History, thread: str, after: int, agent: str, tail: list[Stored]
) -> dict[str, list[ModelMessage]]:
    """The agent's own messages in the tail as their provider sent them, by id: the message
    last, after the recall exchange that led to it (see `history.agent.capability.RECALL`)."""
    own = {s.message.id for s in tail if s.message.author == agent}
    found: dict[str, list[ModelMessage]] = {}
    for id, text in (await history.store.natives(thread, after)).items():
        if id not in own:
            continue
        try:
            found[id] = ModelMessagesTypeAdapter.validate_json(text)
        except ValueError as exc:  # a form this pydantic-ai cannot read: the text
            # The error's type only: a validation error quotes the message's content.
            log.warning(
                "thread %r: message %r has a native form that cannot be read (%s)", thread, id,
                describe(exc), extra={"chat_thread": thread},
            )  # fmt: skip
    return found


async def _outline_parts(
    history: History,
    outline: Outline,
    agent: str | None,
    block_lines: int,
    since: datetime | None,
    cache_point: bool,
) -> list[ModelRequestPart]:
    """The shared outline's blocks, then the agent's step outline's (SPEC section 6a).

    A cache point follows the last full block of each outline when a partial block comes after
    it: the full blocks stay the same until a fold, so the mark keeps hitting while cuts append
    lines. Another ends the outlines.
    """
    steps = outline.steps.get(agent) if agent else None
    outlines = [await _blocks(history, outline.thread, outline.lines, "", block_lines, since)]
    if agent and steps is not None:
        outlines.append(
            await _blocks(history, outline.thread, steps.lines, agent, block_lines, since)
        )
    parts: list[ModelRequestPart] = []
    for texts, at, partial in outlines:
        for k, text in enumerate(texts):
            parts.append(CompactionPart(content=text))
            if cache_point and partial and k == len(texts) - 2:
                parts.append(_mark(at))
    if cache_point and parts:
        parts.append(_mark(max(at for texts, at, _ in outlines if texts)))
    return parts


async def _blocks(
    history: History,
    thread: str,
    lines: list[Entry],
    agent: str,
    block_lines: int,
    since: datetime | None,
) -> tuple[list[str], datetime, bool]:
    """One outline as blocks of `{label}|{text}` lines, the newest `at` it shows, and whether
    its last block is partial."""
    entries = [e for e in lines if since is None or e[3] >= since]
    keys = [(level, index) for level, index, _, _ in entries]
    nodes = await history.store.nodes(thread, keys, agent=agent)
    if len(nodes) < len(keys):  # only if the store lost a node: show what is left
        log.warning(
            "thread %r: %d outline lines have no node", thread, len(keys) - len(nodes),
            extra={"chat_thread": thread},
        )  # fmt: skip
    texts = [f"{n.label}|{one_line(n.text)}" for n in nodes]
    blocks = ["\n".join(texts[k : k + block_lines]) for k in range(0, len(texts), block_lines)]
    at = entries[-1][3] if entries else datetime.min.replace(tzinfo=UTC)
    return blocks, at, len(texts) % block_lines != 0


def _mark(at: datetime) -> UserPromptPart:
    return UserPromptPart(content=[CachePoint()], timestamp=at)


def _tail_after(outline: Outline) -> int:
    """The seq right before the tail's first message."""
    return (outline.tail[0].seq if outline.tail else outline.position + 1) - 1


async def _tail(history: History, outline: Outline) -> list[Stored]:
    """The tail from the log: every message from the tail's first on, processed or not."""
    after = _tail_after(outline)
    found: list[Stored] = []
    while batch := await history.store.pending(outline.thread, after, BATCH):
        found.extend(batch)
        after = batch[-1].seq
    return found


def _tail_messages(
    tail: list[Stored],
    steps: Mapping[str, Step],
    paired: set[str],
    agent: str | None,
    page: int,
    natives: Mapping[str, list[ModelMessage]],
    run: Run | None,
) -> Iterable[ModelMessage]:
    for s in tail:
        m = s.message
        if m.step and agent is not None and m.author != agent:
            continue  # another agent's private step
        step = steps.get(m.id)
        native = natives.get(m.id)
        if native and _whole(native[-1], step, paired, size(m.text) <= page):
            yield from native
        elif step is not None:
            yield from step_messages(m.author, step, paired, page, m.at, own=agent is not None)
        elif m.author == agent and not m.step:
            yield ModelResponse(parts=[TextPart(content=_head(m.text, page, s))], timestamp=m.at)
        else:
            text = render(replace(m, text=_head(m.text, page, s)))
            text += "".join(f" [{f.name}]" for f in m.files)
            ours = run is not None and m.id in run.recorded
            yield ModelRequest(
                parts=[UserPromptPart(content=text, timestamp=m.at)],
                run_id=run.id if run is not None and ours else None,
            )


def _whole(native: ModelMessage, step: Step | None, paired: set[str], fits: bool) -> bool:
    """Whether a message goes as its provider sent it: a response with its calls all paired, a
    request of results all paired and within a page."""
    if isinstance(native, ModelResponse):
        return not isinstance(step, Calls) or all(c.id in paired for c in step.calls)
    return isinstance(step, Returns) and fits and all(r.id in paired for r in step.returns)


def _head(text: str, page: int, stored: Stored) -> str:
    """A text too large for a prompt as its head, with a note to zoom for the rest."""
    if size(text) <= page:
        return text
    if stored.index is None:
        return cut_text(text, page)
    head = prefix(text, page)
    where = label(0, stored.index)
    return f'{head}\n[… {size(text) - size(head)} more bytes: zoom("{where}", page=2) reads on]'


def _apart(sent: list[ModelMessage]) -> set[str]:
    """Ids of calls not answered in the next request, and of results not answering the last."""
    apart: set[str] = set()
    for k, message in enumerate(sent):
        if isinstance(message, ModelResponse):
            after = sent[k + 1] if k + 1 < len(sent) else None
            apart |= _ids(message, ToolCallPart) - _ids(after, ToolReturnPart)
        else:
            before = sent[k - 1] if k else None
            apart |= _ids(message, ToolReturnPart) - _ids(before, ToolCallPart)
    return apart


def _ids(message: ModelMessage | None, kind: type[ToolCallPart | ToolReturnPart]) -> set[str]:
    parts = message.parts if message is not None else []
    return {p.tool_call_id for p in parts if isinstance(p, kind)}


def _merged(pieces: Iterable[ModelMessage]) -> list[ModelMessage]:
    """Neighbours of the same kind as one message, as pydantic-ai sends them: tool results lead."""
    out: list[ModelMessage] = []
    for piece in pieces:
        last = out[-1] if out else None
        if isinstance(piece, ModelRequest) and isinstance(last, ModelRequest):
            parts = sorted([*last.parts, *piece.parts], key=_results_first)
            out[-1] = ModelRequest(parts=parts, run_id=last.run_id or piece.run_id)
        elif (
            isinstance(piece, ModelResponse)
            and isinstance(last, ModelResponse)
            and _synthetic(piece)
            and _synthetic(last)
        ):
            out[-1] = ModelResponse(parts=[*last.parts, *piece.parts], timestamp=piece.timestamp)
        else:
            out.append(piece)
    return out


def _results_first(part: ModelRequestPart) -> int:
    return 0 if isinstance(part, ToolReturnPart) else 1


def _synthetic(response: ModelResponse) -> bool:
    """Made here, not by a provider: pydantic-ai merges such neighbours, so the view does too."""
    r = response
    return r.provider_response_id is None and r.provider_name is None and r.model_name is None


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
