"""Reading conversation files into messages: the formats, how one is recognised, and the checks.

A file is read whole and checked before anything is written. `read` gives every record it could
turn into a message (or an erase) with where it came from, and every bad record with the reason,
so the command line can refuse the file, or skip what is bad, before the store is touched.

Formats, a module each:
    jsonl (`_jsonl`): the project's own (SPEC section 8): one message or `thread.deleted` event
        a line.
    chatgpt (`_chatgpt`): a ChatGPT data export (`conversations.json`, or the zip as
        downloaded), one thread per conversation.
    pydantic-ai (`_pydantic_ai`): a pydantic-ai message history (`ModelMessagesTypeAdapter`
        JSON), one thread.
    chat (`_chat`): a list of `{"role", "content"}` chat messages, one thread.

The one-thread formats take their thread from the file name, or from `thread=`. Their message
ids are made of the thread and the record's position in the file, so the same file always gives
the same ids and ingesting it again changes nothing, while a longer copy of the same chat only
adds its new messages.

In the other apps' formats an assistant's tool calls and their results are its steps, their
text the JSON the pydantic-ai hook writes (`{"tool_calls": [...]}`, `{"tool_returns": [...]}`),
so that a view sends them back as tool calls.

This package reads files only: it imports the core types, never the plugin or the store. What
writes the records (checked against the store, then handed to the plugin) is the `ingest`
command's (`history.cli._storing`). A new input format is a module here, named in `Format` and
dispatched by `_read`.
"""

from __future__ import annotations

from ..contract import Event, ThreadDeleted
from ._jsonl import parse_line
from ._read import detect, read, shared_threads
from ._records import (
    ASSISTANT,
    FORMATS,
    ONE_THREAD,
    SYNTHETIC_START,
    USER,
    Format,
    Parsed,
    Problem,
    Record,
)

__all__ = (
    "ASSISTANT",
    "FORMATS",
    "ONE_THREAD",
    "SYNTHETIC_START",
    "USER",
    "Event",
    "Format",
    "Parsed",
    "Problem",
    "Record",
    "ThreadDeleted",
    "detect",
    "parse_line",
    "read",
    "shared_threads",
)
