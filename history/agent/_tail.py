"""The tail as an agent is sent it: every message after the outline, whole, from the log.

The tail is the outline's committed tail and every message stored after it, so a view taken
while processing is behind misses nothing. The agent's own messages are its responses, sent as
its provider sent them when they were stored with that form (reasoning items, thinking
signatures, item and call ids: see `History.message_created`'s `native`), so the next request
starts with the whole of the last one; everyone else's are user parts naming who wrote them;
the agent's steps are its tool calls and returns (see `history.agent.steps`), and a call or
return whose partner is not in view, or not right next to it, is plain text, since providers
refuse a lone tool part. Other agents' steps are private to them and left out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from .._names import Display, named
from ..contract import Snapshot, Stored
from ..lines import label, prefix, render, size
from ..plugin import Reading
from ..summarizer import describe
from .steps import Calls, Returns, Step, cut_text, step_messages

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Run:
    """An agent's run, for the view it is sent: the requests of the messages it recorded (its
    prompt) carry its id, so pydantic-ai counts them among the run's new messages."""

    id: str
    recorded: frozenset[str]
    """Ids of the messages the run recorded."""

    def sees(self, tail: list[Stored]) -> list[Stored]:
        """The tail as this run is sent it: what was stored before its first message, then its
        own. What others store meanwhile (another run on the thread, a second tab's) is in the
        thread, in the order it was stored, for the runs that start after; this run answers
        its own prompt."""
        first = next((s.seq for s in tail if s.message.id in self.recorded), None)
        if first is None:
            return tail
        return [s for s in tail if s.seq < first or s.message.id in self.recorded]


def read_natives(
    snapshot: Snapshot, agent: str, tail: list[Stored]
) -> dict[str, list[ModelMessage]]:
    """The agent's own messages in the tail as their provider sent them, by id: the message
    last, after the recall exchange that led to it (see `history.agent.capability.RECALL`)."""
    thread = snapshot.outline.thread
    own = {s.message.id for s in tail if s.message.author == agent}
    found: dict[str, list[ModelMessage]] = {}
    for id, text in snapshot.natives.items():
        if id not in own:
            continue
        try:
            found[id] = ModelMessagesTypeAdapter.validate_json(text)
        except ValueError as exc:  # a form this pydantic-ai cannot read: the text
            # The error's type only: a validation error quotes the message's content.
            log.warning(
                "thread %r: message %r has a native form that cannot be read (%s)",
                thread,
                id,
                describe(exc),
                extra={"chat_thread": thread},
            )
    return found


async def answered(history: Reading, thread: str, agent: str) -> str:
    """Whom `agent` answers: the author of the thread's newest shared message from someone else
    (`""` when there is none)."""
    snapshot = await history.store.snapshot(thread)
    tail = () if snapshot is None else snapshot.tail
    found = (s.message.author for s in reversed(tail) if not s.message.step)
    return next((author for author in found if author != agent), "")


def tail_messages(
    tail: list[Stored],
    steps: Mapping[str, Step],
    paired: set[str],
    agent: str | None,
    page: int,
    natives: Mapping[str, list[ModelMessage]],
    run: Run | None,
    names: Display | None = None,
) -> Iterable[ModelMessage]:
    """The tail's messages as `agent` is sent them: its own as it said them (`natives`, else
    responses), its steps as tool parts where `paired`, everyone else's as user parts, their
    headers under the thread's display `names`."""
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
            text = render(named(m, names or {}), _head(m.text, page, s))
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


def unpaired(sent: list[ModelMessage]) -> set[str]:
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


def merged(pieces: Iterable[ModelMessage]) -> list[ModelMessage]:
    """Neighbours of the same kind as one message, as pydantic-ai sends them: tool results lead.

    Each run of neighbours is merged once, when it ends: a tail of many requests in a row costs
    one pass over their parts, not one per request."""
    out: list[ModelMessage] = []
    run: list[ModelMessage] = []
    for piece in [*pieces, None]:
        if run and not (piece is not None and _joins(run[-1], piece)):
            out.append(run[0] if len(run) == 1 else _merge(run))
            run = []
        if piece is not None:
            run.append(piece)
    return out


def _joins(last: ModelMessage, piece: ModelMessage) -> bool:
    """Whether pydantic-ai would send `piece` as one message with the one before it."""
    if isinstance(piece, ModelRequest):
        return isinstance(last, ModelRequest)
    return isinstance(last, ModelResponse) and _synthetic(piece) and _synthetic(last)


def _merge(run: Sequence[ModelMessage]) -> ModelMessage:
    """A run of requests as one (tool results first, each kind in its order; the first run id),
    or of responses made here as one (the last one's time)."""
    if isinstance(run[0], ModelRequest):
        requests = [m for m in run if isinstance(m, ModelRequest)]
        parts = sorted([p for m in requests for p in m.parts], key=_results_first)
        return ModelRequest(
            parts=parts, run_id=next((m.run_id for m in requests if m.run_id), None)
        )
    responses = [m for m in run if isinstance(m, ModelResponse)]
    return ModelResponse(
        parts=[p for m in responses for p in m.parts], timestamp=responses[-1].timestamp
    )


def _results_first(part: ModelRequestPart) -> int:
    return 0 if isinstance(part, ToolReturnPart) else 1


def _synthetic(response: ModelResponse) -> bool:
    """Made here, not by a provider: pydantic-ai merges such neighbours, so the view does too."""
    r = response
    return r.provider_response_id is None and r.provider_name is None and r.model_name is None
