"""A view as plain text, sized, and the request a named provider would receive for it.

It sits above `prompt` and `providers`: the provider's request runs an agent whose capability
reads the view, so the view itself never imports the providers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..lines import size
from ..plugin import Reading
from ..processors.weight import tokens
from .prompt import prompt_text, view
from .providers import Sent, provider_request


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


async def render_view(
    history: Reading,
    thread: str,
    *,
    agent: str | None = None,
    block_lines: int | None = None,
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
        request = await provider_request(
            history, thread, model, agent=agent or "assistant", block_lines=block_lines
        )
    return Rendered(
        text=text,
        tokens=tokens(text, history.settings.encoding),
        bytes=size(text),
        request=request,
    )
