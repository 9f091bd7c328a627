"""What chat-outline sends an agent, as the benchmarks measure it: the plugin's own `view()`.

`chat_history_prompt` takes the messages `history.view` builds for an agent (the outline in
blocks of lines with its cache points, then the tail: the agent's answers, its tool calls and
returns, everyone else's messages) and makes each part one block, as a provider's cache sees
them; a `CachePoint` the view places becomes a cache mark, and the end of the prompt is marked
as every strategy's is. An outline block is counted as pydantic-ai's model adapters send it:
framed as a summary of the earlier conversation (`summary_framing`).
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import (
    CachePoint,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from history import prompt_text, search, view
from history.agent.providers import recording_model
from history.plugin import History

from .cache import Prompt

_SENTINEL = "(the outline block)"
_framing: tuple[str, str] | None = None


async def summary_framing() -> tuple[str, str]:
    """What pydantic-ai's model adapters send before and after a `CompactionPart`'s content:
    they send it as user text, framed as a summary a separate model wrote (the same for OpenAI
    and Anthropic). Read once, from the request an offline Anthropic model records."""
    global _framing
    if _framing is None:
        llm, wire = recording_model("anthropic:claude-sonnet-5-5")
        earlier = ModelRequest(parts=[CompactionPart(content=_SENTINEL)])
        await Agent(llm).run(
            "next", message_history=[earlier, ModelResponse(parts=[TextPart("ok")])]
        )
        framed = wire.bodies[0]["messages"][0]["content"][0]["text"]
        head, _, tail = framed.partition(_SENTINEL)
        _framing = head, tail
    return _framing


async def chat_history_prompt(history: History, thread: str, *, agent: str) -> Prompt:
    """The prompt `agent` of `thread` is sent now, as blocks and cache marks."""
    head, tail = await summary_framing()
    blocks: list[str] = []
    marks: list[int] = []
    for message in await view(history, thread, agent=agent):
        pieces: list[ModelMessage]
        if isinstance(message, ModelRequest):
            pieces = [ModelRequest(parts=[part]) for part in message.parts]
        else:
            pieces = [ModelResponse(parts=[part]) for part in message.parts]
        for piece in pieces:
            part = piece.parts[0]
            if isinstance(part, UserPromptPart) and _marked(part):
                marks.append(len(blocks))
            if isinstance(part, CompactionPart):
                text = f"{head}{part.content}{tail}"
            else:
                text = _content(piece)
            if text:
                blocks.append(text)
    marks.append(len(blocks))
    return Prompt(blocks=tuple(blocks), marks=tuple(sorted(set(marks) - {0})))


def _content(piece: ModelMessage) -> str:
    """A one-part message as the meter counts it: its text without the role line that
    `prompt_text` puts before a message's text (`[user]`, `[assistant]`). A
    provider sends the role as a field, which the meter's token per block stands for, as it does
    for every strategy's blocks; a tool call or result keeps its line (its id and name are
    sent)."""
    text = prompt_text([piece])
    if isinstance(piece.parts[0], UserPromptPart | TextPart):
        text = text.partition("\n")[2]
    return text.removesuffix("\n")


def _marked(part: UserPromptPart) -> bool:
    """A part that is a cache point: the view's mark after the outline's blocks."""
    return not isinstance(part.content, str) and any(
        isinstance(item, CachePoint) for item in part.content
    )


async def search_finds(history: History, thread: str, cue: str, value: str) -> bool:
    """Whether the thread's search for `cue` turns up `value`: in a hit's line, or in the
    message a level-0 hit names (what an agent reaches with one zoom)."""
    for hit in await search(history, thread, cue, limit=10):
        if value in hit.text:
            return True
        stored = await history.store.message(hit.message) if hit.message else None
        if stored is not None and value in stored.message.text:
            return True
    return False
