"""The errors chat-outline raises, one small family.

HistoryError
 ├── ClosedError          the plugin or store was used outside its `async with` block
 ├── ConfigurationError   settings that cannot work (refused at startup)
 ├── InputError           a message or event refused before anything is written
 │    ├── ConflictError   an id (or a node, a call) already stored with other content
 │    │    └── SpaceConflict  a message naming another space than its thread's
 │    └── Below           (ingest) a bad record below the place being read; each is reported
 │                        as a problem of its file, never raised to the caller
 ├── StoreError           the store failed, or is not ours (driver errors translated once)
 │    ├── StoreGoneError  the store's database, schema or tables are gone (dropped)
 │    └── ClaimLapsedError (store.claims) this process's lease on a thread lapsed and another
 │                        took it over: the commit is refused
 ├── NotFoundError        a thread or node that does not exist
 ├── RebuildRefused       a rebuild that would drop lines, unless forced
 ├── RetractRefused       taking back messages a line stands for, or a cut was tried at
 └── SummarizerError      the summarizer raised or timed out (the batch is retried)
      ├── Exhausted       (summarizer) the same ask failed too often: its line is a cut
      ├── Refused         (summarizer) a failure waiting will not mend: a key or model refused
      ├── Down            (summarizer) the breaker is open and the History stops rather than
      │                   fall back: the thread's messages stay pending
      └── UnpinnedError   work that would call the model where only recorded calls were allowed

Raised inside the plugin and caught there, never reaching a caller (outside the family, as
they are control flow, not failures):

Exception
 ├── Vanished             (processing) a message the outline names is gone: the thread was
 │                        erased under the batch, which is dropped
 ├── _Stale               (lane; store.sql) the outline moved under a commit: it is redone
 ├── Stale                (store.changes) the outline moved since a rename or re-summary was
 │                        made from it: the change is not written (`Store.change` is False)
 └── _Raised              (summarizer) a BaseException a reply raised of its own, carried to
                          its caller as an ordinary failure
"""

from __future__ import annotations


class HistoryError(Exception):
    """The root of every error chat-outline raises."""


class ConfigurationError(HistoryError, ValueError):
    """Settings that cannot work: refused at startup, before any message is handled."""


class InputError(HistoryError, ValueError):
    """A message or event refused by the checks; nothing was written.

    Attributes:
        field: the name of the offending field, when one is to blame.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConflictError(InputError):
    """A message id, a node or a call already stored with other content; the stored one is kept."""


class SpaceConflict(ConflictError):
    """A message names another space than the one its thread is in: nothing was written (move
    the thread with `History.set_space` first)."""


class StoreError(HistoryError):
    """The store failed, or the database is not one of ours."""


class ClosedError(HistoryError):
    """The plugin or its store was used outside its `async with` block.

    Not a StoreError: a store failure is worth trying again, using a closed one never is."""


class StoreGoneError(StoreError):
    """The store's database, schema or tables are gone (dropped under a running process).

    Trying again cannot help until the store is restored: the plugin stops processing (its
    threads wait), and a worker exits with this error instead of polling forever.
    """


class NotFoundError(HistoryError, LookupError):
    """A thread or a node that the store does not hold."""


class SummarizerError(HistoryError):
    """The summarizer raised or timed out; the thread's batch is retried later."""


class UnpinnedError(SummarizerError):
    """Work that needs the model where only recorded (pinned) calls may answer.

    Raised by a replay told to refuse misses, and by a rebuild that would call the model without
    being allowed to; nothing was changed.

    Attributes:
        calls: how many model calls the refused work would make.
    """

    def __init__(self, message: str, *, calls: int = 1) -> None:
        super().__init__(message)
        self.calls = calls


class RebuildRefused(HistoryError):
    """A rebuild that would leave summarized messages without a line, refused unless forced;
    nothing was changed."""


class RetractRefused(HistoryError):
    """Taking back messages that are no longer whole in their thread's tail (a line stands for
    one of them, or its processing cut or folded the outline); nothing was changed."""
