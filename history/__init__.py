"""chat-history: a token-weighted tail, a binary summary tree and a bounded outline per thread."""

from .contract import File, Message, Outline, Stored, Summary
from .errors import (
    ClosedError,
    ConfigurationError,
    ConflictError,
    HistoryError,
    InputError,
    NotFoundError,
    StoreError,
    SummarizerError,
    UnpinnedError,
)
from .metering import ThreadUsage, Usage
from .pins import Replay
from .plugin import Counters, History
from .settings import HistorySettings, settings_from_env
from .summarizer import Ask, Echo, Reply, Scripted, Summarizer, Task

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
    "InputError",
    "Message",
    "NotFoundError",
    "Outline",
    "Replay",
    "Reply",
    "Scripted",
    "StoreError",
    "Stored",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "Task",
    "ThreadUsage",
    "UnpinnedError",
    "Usage",
    "settings_from_env",
)
