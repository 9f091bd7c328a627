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
)
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
    "Reply",
    "Scripted",
    "StoreError",
    "Stored",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "Task",
    "settings_from_env",
)
