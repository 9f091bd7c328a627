"""chat-history: a token-weighted tail, a binary summary tree and a bounded outline per thread."""

from .agent import ThreadHistory
from .asking import Counters
from .contract import File, Hit, Message, Outline, Stored, Summary
from .errors import (
    ClosedError,
    ConfigurationError,
    ConflictError,
    HistoryError,
    InputError,
    NotFoundError,
    RebuildRefused,
    StoreError,
    SummarizerError,
    UnpinnedError,
)
from .metering import ThreadUsage, Usage
from .pins import Replay
from .plugin import History
from .settings import HistorySettings, settings_from_env
from .summarizer import Ask, Echo, Reply, Scripted, Summarizer, Task
from .view import Rendered, Zoom, prompt_text, render_view, search, view, zoom

__all__ = (
    "Ask",
    "ClosedError",
    "ConfigurationError",
    "ConflictError",
    "Counters",
    "Echo",
    "File",
    "History",
    "HistoryError",
    "HistorySettings",
    "Hit",
    "InputError",
    "Message",
    "NotFoundError",
    "Outline",
    "RebuildRefused",
    "Rendered",
    "Replay",
    "Reply",
    "Scripted",
    "StoreError",
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
    "prompt_text",
    "render_view",
    "search",
    "settings_from_env",
    "view",
    "zoom",
)
