"""pydantic-ai-harness's `ConversationSearch` over `StepPersistence`: the retrieval peer.

As its README sets it up: an agent with `StepPersistence(store=SqliteStepStore(...))` persists
each thread's messages (here one run per thread, the thread's messages as its
`message_history`, answered by a `FunctionModel`, with the thread as its `conversation_id`),
and `ConversationSearch(SnapshotHistorySource(store), scope="conversation")` gives the
`search_conversation_history` tool, which BM25-ranks what the store holds. The tool is called
as the agent would call it, with the question as its query; its answer's excerpts name their
stored messages by position (`[n]`), and an excerpt shows the answer when its stored message
holds it (pydantic-ai merges a person's messages in a row into one request).
`context_lines=0` makes each excerpt its one match (its default, 5, shows neighbours around
each, in the same rank order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness import ConversationSearch, StepPersistence
from pydantic_ai_harness.conversation_search import SnapshotHistorySource
from pydantic_ai_harness.step_persistence import SqliteStepStore

from history.contract import Message

from .pydantic_peers import convert

_MATCH = re.compile(r"^\[(\d+)\] ", re.M)


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content="noted")])


class HarnessSearch:
    """One store of persisted threads and the search tool over it."""

    def __init__(self, path: Path) -> None:
        self.store: Any = SqliteStepStore(database=path)
        self.model = FunctionModel(_answer, model_name="bench-agent")
        self.threads: dict[str, list[list[str]]] = {}
        """Each thread's message ids, as the stored messages hold them, in order."""
        search = ConversationSearch(
            SnapshotHistorySource(self.store), scope="conversation", context_lines=0
        )
        self.tool: Any = search.get_toolset()

    async def persist(self, thread: Sequence[Message], *, agent: str) -> None:
        """Persist `thread` as one run of its own conversation."""
        history = [convert(m, agent) for m in thread]
        ids = [m.id for m in thread]
        while history and not isinstance(history[-1], ModelRequest):
            history.pop()  # a run's history ends with a request
            ids.pop()
        # pydantic-ai merges adjacent requests (a person's messages in a row) into one, so
        # one stored message may hold several of the thread's.
        held: list[list[str]] = []
        for k, message in enumerate(history):
            if k and isinstance(message, ModelRequest) and isinstance(history[k - 1], ModelRequest):
                held[-1].append(ids[k])
            else:
                held.append([ids[k]])
        self.threads[thread[0].thread] = held
        persisted = Agent(self.model, capabilities=[StepPersistence(store=self.store)])
        await persisted.run(message_history=history, conversation_id=thread[0].thread)

    async def top(self, thread: str, query: str, k: int) -> list[list[str]]:
        """The thread's messages each excerpt of the tool's answer shows, in its order, at
        most `k` excerpts."""
        ctx = RunContext(deps=None, model=self.model, usage=RunUsage(), conversation_id=thread)
        answer = await self.tool.search_conversation_history(ctx, query)
        held = self.threads[thread]
        positions = [int(n) for n in _MATCH.findall(str(answer))]
        return [held[n] for n in positions if n < len(held)][:k]

    async def rank(self, thread: str, query: str, answer: str, k: int) -> int | None:
        """Where the excerpt showing `answer` comes in the tool's first `k`; None: not there."""
        shown = await self.top(thread, query, k)
        return next((n for n, ids in enumerate(shown) if answer in ids), None)
