"""chat-outline: a token-weighted tail, a binary summary tree and a bounded outline per thread."""

import typing

from .breaker import Health
from .contract import Ask, File, Hit, Message, Outline, Reply, Stored, Summary, Task
from .errors import (
    ClosedError,
    ConfigurationError,
    ConflictError,
    HistoryError,
    InputError,
    NotFoundError,
    RebuildRefused,
    RetractRefused,
    SpaceConflict,
    StoreError,
    StoreGoneError,
    SummarizerError,
    UnpinnedError,
)
from .metering import ThreadUsage, Usage
from .settings import HistorySettings, settings_from_env
from .store import Store, open_store
from .summarizer import Counters, Echo, Scripted, Summarizer

__version__ = "0.1.0"

if typing.TYPE_CHECKING:
    from .agent.capability import ThreadHistory
    from .agent.lookup import Zoom, search, zoom
    from .agent.prompt import prompt_text, view
    from .agent.rendering import Rendered, render_view
    from .carry import export, load
    from .pins import Replay
    from .plugin import History, ReadOnly
    from .rebuilding import rebuild

# These pull in pydantic-ai (the view, the agent, a rebuild) or the tokenizer and the event
# loop (the plugin), so they are imported when first used: the command line starts without.
_LAZY = {
    "History": "plugin",
    "ReadOnly": "plugin",
    "Rendered": "agent.rendering",
    "Replay": "pins",
    "Resummary": "reconsolidating",
    "ThreadHistory": "agent.capability",
    "Zoom": "agent.lookup",
    "export": "carry",
    "load": "carry",
    "prompt_text": "agent.prompt",
    "rebuild": "rebuilding",
    "render_view": "agent.rendering",
    "search": "agent.lookup",
    "view": "agent.prompt",
    "zoom": "agent.lookup",
}


def __getattr__(name: str) -> typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'history' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = (
    "Ask",
    "ClosedError",
    "ConfigurationError",
    "ConflictError",
    "Counters",
    "Echo",
    "File",
    "Health",
    "History",
    "HistoryError",
    "HistorySettings",
    "Hit",
    "InputError",
    "Message",
    "NotFoundError",
    "Outline",
    "ReadOnly",
    "RebuildRefused",
    "Rendered",
    "Replay",
    "Reply",
    "Resummary",
    "RetractRefused",
    "Scripted",
    "SpaceConflict",
    "Store",
    "StoreError",
    "StoreGoneError",
    "Stored",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "Task",
    "ThreadHistory",
    "ThreadUsage",
    "UnpinnedError",
    "Usage",
    "Zoom",
    "export",
    "load",
    "open_store",
    "prompt_text",
    "rebuild",
    "render_view",
    "search",
    "settings_from_env",
    "view",
    "zoom",
)
