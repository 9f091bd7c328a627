"""The pydantic-ai hook: an agent is sent its thread's view, and what it says is recorded.

    history = History(HistorySettings(summarizer="echo"), store="chat.sqlite")
    agent = Agent(model, capabilities=[ThreadHistory(history, "t", agent="north")])
    async with history:
        result = await agent.run("What did we settle about the price?")

Before every model request the run's history is replaced with the thread's view (the run's
`message_history` is not read: the thread is the history), and the run's new messages (the
user's prompt, the model's answers, its tool calls and their results) are handed to the plugin
first, so the view holds them and the chat keeps being recorded. The agent also gets two tools,
`zoom` and `search_history`, to read what its outline only summarizes.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    CachePoint,
    CompactionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import AgentDepsT, Tool
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from ..contract import File, Message
from ..errors import ConfigurationError, NotFoundError
from ..lines import size
from ..plugin import History, Reading
from ._cold import COLD_WAIT, check_wait, snapshot_for
from ._tail import answered
from .caching import MAX_MARKS
from .lookup import PAGE, search, zoom
from .prompt import Run, build
from .steps import Returns, encode, prompt_content, request_steps, response_step, response_text

log = logging.getLogger(__name__)

CACHE_SETTINGS = (
    "anthropic_cache",
    "anthropic_cache_instructions",
    "anthropic_cache_tool_definitions",
    "anthropic_cache_messages",
)
"""pydantic-ai's settings that place a mark each."""
RECALL = frozenset({"zoom", "search_history"})
"""The tools that read the thread's own history. What they find is recall: not new content, so
not recorded in the thread. A response that calls only these, and the request of their results,
are held until the agent answers, and stored with the answer as its native form: the agent is
sent the whole exchange while the answer is in the tail, the thread weighs and summarizes only
the answer's text. When the run goes on otherwise (another tool, no text), what was held is
recorded as steps, what recall found as a note of its size (`recalled`)."""

INSTRUCTIONS = """\
The conversation so far comes first as an outline of its older part, one entry per line as \
`label|summary` (the label `first+count` names the messages a line covers), then its newest \
messages whole. Call `zoom` with a label to open a line into the two lines under it, down to a \
single message whole; call `search_history` to find lines and messages by their words."""


class ThreadHistory(ProcessHistory[AgentDepsT]):
    """A capability binding an agent to one thread of a History: it reads and records the chat."""

    def __init__(
        self,
        history: Reading,
        thread: str,
        *,
        agent: str = "assistant",
        user: str = "user",
        record_prompt: bool = True,
        tools: bool = True,
        block_lines: int | None = None,
        max_age: timedelta | None = None,
        cache_point: bool | None = None,
        page: int = PAGE,
        record: bool = True,
        recall: int = 0,
        cold_wait: float = COLD_WAIT,
    ) -> None:
        """Bind an agent to `thread`.

        Args:
            history: the History, opened before the agent runs (a ReadOnly store with
                `record=False`).
            thread: the thread the agent reads and writes.
            agent: the author of the agent's messages and steps.
            user: the author of the run's prompt.
            record_prompt: record the run's prompt; False when the app hands every message to
                the History itself (the prompt is then read from the thread).
            tools: give the agent `zoom` and `search_history` (and instructions about them).
            block_lines: outline lines per block; None: blocks by size (see `view`).
            max_age: the window by age: only lines and messages younger than this are sent.
            cache_point: mark the outline for the provider's prompt cache; None marks it where
                the serving model supports cache points.
            page: a message over this many bytes is sent as its head, with a note to zoom.
            record: False to read only: nothing of the run is recorded (`render_view` runs a
                model this way to show what it is sent).
            recall: tokens of search hits for the newest message from someone other than the
                agent, sent after the tail, outside the cached prefix (0: none).
            cold_wait: seconds a cold turn waits for its cut (`HistorySettings.cold`, `COLD_WAIT`).
        """
        if record and not isinstance(history, History):
            raise ConfigurationError(
                "ThreadHistory records the run in a History: give it one, or record=False"
            )
        super().__init__(processor=self._process)
        self.history, self.thread = history, thread
        self.agent, self.user, self.record_prompt, self.tools = agent, user, record_prompt, tools
        self.block_lines, self.max_age, self.cache_point, self.page = (
            block_lines,
            max_age,
            cache_point,
            page,
        )
        self.record, self.recall, self.cold_wait = record, recall, check_wait(cold_wait)
        self._sent: list[ModelMessage] | None = None
        self._system: list[SystemPromptPart] = []
        self._recorded: list[str] = []
        self._held: list[ModelMessage] = []
        self._to = ""  # whom the agent answers (`answered`), once known

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> ThreadHistory[AgentDepsT]:
        """A fresh copy per run: what a run has sent and recorded is its own."""
        return ThreadHistory(
            self.history,
            self.thread,
            agent=self.agent,
            user=self.user,
            record_prompt=self.record_prompt,
            tools=self.tools,
            block_lines=self.block_lines,
            max_age=self.max_age,
            cache_point=self.cache_point,
            page=self.page,
            record=self.record,
            recall=self.recall,
            cold_wait=self.cold_wait,
        )

    def get_instructions(self) -> str | None:
        return INSTRUCTIONS if self.tools else None

    def get_toolset(self) -> AbstractToolset[AgentDepsT] | None:
        if not self.tools:
            return None
        history, thread, agent = self.history, self.thread, self.agent

        async def zoom_tool(label: str, page: int = 1) -> str:
            """Open a line of the outline: its two lines, or a single message or step whole.

            Args:
                label: the label before a line's `|`, like `0+8`, `12+1`, or `s4+2` for a line
                    of your own steps.
                page: the page of a long message, from 1.
            """
            try:
                return (await zoom(history, thread, label, agent=agent, page=page)).text
            except NotFoundError as exc:  # an answer to read, not a retry: TestModel would loop
                return str(exc)

        async def search_tool(query: str) -> str:
            """Find the lines and messages of this conversation that use the query's words.

            Args:
                query: the words to look for.
            """
            if not query.strip():
                return "the query is empty: give the words to look for, like 'price launch'"
            hits = await search(history, thread, query, agent=agent)
            if not hits:
                return f"nothing in this conversation matches {query!r}"
            return "\n".join(f"{hit.label}|{hit.text}" for hit in hits)

        return FunctionToolset(
            [Tool(zoom_tool, name="zoom", max_retries=3), Tool(search_tool, name="search_history")]
        )

    async def prepare_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Keep the outline's cache marks within what the model takes, the first first.

        None for a model that does not take them; otherwise as many as the provider's limit
        leaves after the marks the app's own cache settings place (instructions, tool
        definitions, the conversation's end), so the provider never has to drop one: the mark
        after the outline's closed blocks, which holds from one fold to the next, goes last.
        """
        marks = self.cache_point
        if marks is None:
            marks = bool(request_context.model.profile.get("supports_cache", False))
        room = MAX_MARKS - _marks_taken(request_context.model_settings) if marks else 0
        request_context.messages = [_unmarked(m, room) for m in request_context.messages]
        return request_context

    async def after_run(
        self, ctx: RunContext[AgentDepsT], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Record the run's last messages (its final answer), which no later request carried."""
        if self._sent is not None:
            await self._record(ctx, result.all_messages()[len(self._sent) :])
            await self._release(ctx)
        return result

    async def _process(
        self, ctx: RunContext[AgentDepsT], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        if turn := self._sent is None:
            first = messages[0] if messages else None
            if isinstance(first, ModelRequest):
                self._system = [p for p in first.parts if isinstance(p, SystemPromptPart)]
            new = messages[-1:] if messages and isinstance(messages[-1], ModelRequest) else []
        else:
            new = messages[len(self._sent or ()) :]
        await self._record(ctx, new)
        since = None if self.max_age is None else datetime.now(UTC) - self.max_age
        sent = await build(
            self.history,
            self.thread,
            agent=self.agent,
            block_lines=self.block_lines,
            since=since,
            cache_point=True,
            page=self.page,
            recall=self.recall,
            run=Run(id=ctx.run_id, recorded=frozenset(self._recorded)) if ctx.run_id else None,
            snapshot=await snapshot_for(
                self.history,
                self.thread,
                agent=self.agent,
                turn=turn and self.record,
                wait=self.cold_wait,
            ),
        )
        sent += self._held  # this run's recall, not recorded until its answer
        if not self.record:  # read only: the prompt as it would have been recorded
            sent += [ModelRequest(parts=list(_unrecorded(new, self.user, self.agent)))]
        if not sent:
            sent = list(messages)  # nothing recorded yet: the run's own messages
        elif self._system:
            first = sent[0]
            if isinstance(first, ModelRequest):
                sent[0] = ModelRequest(parts=[*self._system, *first.parts])
            else:
                sent.insert(0, ModelRequest(parts=list(self._system)))
        self._sent = sent
        return list(sent)

    async def _record(self, ctx: RunContext[AgentDepsT], messages: Sequence[ModelMessage]) -> None:
        if not self.record:
            return
        for message in messages:
            if self._recall(message):
                self._held.append(message)  # see `RECALL`
            elif isinstance(message, ModelResponse):
                calls = response_step(message)
                text = response_text(message)
                if calls is None and text:  # the answer carries the recall that led to it
                    native = _native(*self._held, message)
                    self._held.clear()
                    self._to = self._to or await answered(self.history, self.thread, self.agent)
                    await self._add(ctx, text, message.timestamp, native=native, to=self._to)
                    continue
                await self._release(ctx)
                if calls is not None:
                    native = _native(message)
                    await self._add(ctx, encode(calls), message.timestamp, step=True, native=native)
            else:
                await self._release(ctx)
                await self._record_request(ctx, message)

    def _recall(self, message: ModelMessage) -> bool:
        """A response whose calls all read the thread, or the request of their results."""
        if not self.tools:
            return False
        if isinstance(message, ModelResponse):
            calls = [p.tool_name for p in message.parts if isinstance(p, ToolCallPart)]
            return bool(calls) and all(name in RECALL for name in calls)
        parts = message.parts
        held = {p.tool_call_id for m in self._held for p in m.parts if isinstance(p, ToolCallPart)}
        return bool(parts) and all(
            isinstance(p, ToolReturnPart) and p.tool_call_id in held for p in parts
        )

    async def _release(self, ctx: RunContext[AgentDepsT]) -> None:
        """Record held recall as steps: the run went on without an answer to carry it."""
        held, self._held = self._held, []
        for message in held:
            if isinstance(message, ModelResponse):
                calls = response_step(message)
                assert calls is not None  # held responses call tools
                native = _native(message)
                await self._add(ctx, encode(calls), message.timestamp, step=True, native=native)
            else:
                await self._record_request(ctx, message)

    async def _record_request(self, ctx: RunContext[AgentDepsT], message: ModelRequest) -> None:
        results = [p for p in message.parts if isinstance(p, ToolReturnPart)]
        for found in request_steps(message.parts):
            sent = None
            if isinstance(found, Returns):  # sent as it was, with the call ids
                sent = _native(ModelRequest(parts=results, run_id=message.run_id))
                if self.tools:
                    found = recalled(found)
            await self._add(ctx, encode(found), message.timestamp, step=True, native=sent)
        if not self.record_prompt:
            return
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                text, files = prompt_content(part.content)
                if text or files:
                    self._to = self.user
                    await self._add(
                        ctx, text, part.timestamp, author=self.user, to=self.agent, files=files
                    )

    async def _add(
        self,
        ctx: RunContext[AgentDepsT],
        text: str,
        at: datetime | None,
        *,
        step: bool = False,
        author: str | None = None,
        to: str = "",
        files: tuple[File, ...] = (),
        native: str | None = None,
    ) -> None:
        run = ctx.run_id or uuid.uuid4().hex
        id = f"{run}:{len(self._recorded)}"
        self._recorded.append(id)
        message = Message(
            id=id,
            thread=self.thread,
            author=self.agent if author is None else author,
            to=to,
            text=text,
            at=at or datetime.now(UTC),
            step=step,
            files=files,
        )
        assert isinstance(self.history, History)  # `record` needs one (see __init__)
        await self.history.message_created(message, native=native)


def recalled(step: Returns) -> Returns:
    """A step of results with what `zoom` and `search_history` found as a note of its size.

    The agent is sent what they found whole while the step is in the tail (its native form);
    the thread weighs and keeps only the note (see `RECALL`).
    """
    return Returns(
        returns=tuple(
            replace(r, content=f"[recalled {size(_text(r.content))} bytes]")
            if r.name in RECALL and r.outcome == "success"
            else r
            for r in step.returns
        )
    )


def _text(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _native(*messages: ModelMessage) -> str:
    """Messages as pydantic-ai serializes them: what their provider needs to continue."""
    return ModelMessagesTypeAdapter.dump_json(list(messages)).decode()


def _unrecorded(messages: Sequence[ModelMessage], user: str, agent: str) -> list[UserPromptPart]:
    """The prompts of `messages` as the view sends them once recorded."""
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    return [
        UserPromptPart(f"{user} → {agent}: {prompt_content(p.content)[0]}", timestamp=p.timestamp)
        for p in parts
        if isinstance(p, UserPromptPart)
    ]


def _marks_taken(settings: ModelSettings | None) -> int:
    """How many cache marks the app's own settings place (pydantic-ai's Anthropic settings, or
    the unified `cache`, which marks the instructions, the tools and the conversation)."""
    given: dict[str, object] = dict(settings or {})
    own = [given.get(key) for key in CACHE_SETTINGS]
    if any(key in given for key in CACHE_SETTINGS):
        return sum(1 for value in own if value)
    return 3 if given.get("cache") else 0


def _unmarked(message: ModelMessage, room: int) -> ModelMessage:
    """The message with its outline marks beyond the first `room` left out."""
    if not isinstance(message, ModelRequest) or not any(
        isinstance(p, CompactionPart) for p in message.parts
    ):
        return message
    parts: list[ModelRequestPart] = []
    for p in message.parts:
        if _mark(p):
            if room <= 0:
                continue
            room -= 1
        parts.append(p)
    if len(parts) == len(message.parts):
        return message
    return replace(message, parts=parts)


def _mark(part: ModelRequestPart) -> bool:
    return (
        isinstance(part, UserPromptPart)
        and not isinstance(part.content, str)
        and all(isinstance(i, CachePoint) for i in part.content)
    )
