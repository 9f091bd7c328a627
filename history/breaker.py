"""The summarizer's circuit breaker: one per `History`, shared by all its threads.

Closed, every ask is sent. After `OPEN_AFTER` (6) failures in a row (across threads), or at once
on an error that waiting will not mend (a refused key, an unknown model, a refused request),
it opens: no ask is sent, and the lines a cut needs fall back at once (SPEC section 5, version
3), so the tail is still cut on time and a dead provider is not hammered. Once a cool-down has
passed, one ask at a time is let through as a probe (`probing`); the cool-down doubles with
each failed probe, from `FIRST_COOL_DOWN` up to `LONGEST_COOL_DOWN`. Any answer closes it.

It logs one WARNING when it opens and one when it closes, with the error's type and status only
(`describe`): a provider's error body may echo message text or the key.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

log = logging.getLogger(__name__)

OPEN_AFTER = 6
"""Summarizer failures in a row, across threads, that open the breaker: one more than an ask
may fail before its line falls back (`summarizer.FAILED_ASKS_BEFORE_FALLBACK`), so that one
request that keeps failing while the others are answered does not open it alone, and a
summarizer that fails everything opens it with the next ask."""
FIRST_COOL_DOWN = 1.0
"""Seconds after opening before the first probe."""
LONGEST_COOL_DOWN = 60.0
"""The longest wait between two probes: a provider back up is seen within it."""

State = Literal["closed", "open", "probing"]
WhenDown = Literal["fall back", "stop"]
"""What threads do while the breaker is open: their lines fall back at once, or they stop."""


@dataclass(frozen=True, kw_only=True)
class Health:
    """How the summarizer is doing, as `History.health()` tells it."""

    state: State
    """closed: asks are sent; open: none is (lines fall back); probing: one ask is sent to see
    whether the summarizer answers again."""
    failures: int
    """Summarizer failures in a row (across threads) since the last answer."""
    since: datetime | None
    """When the breaker last opened (closed: when it closed again; None: it never opened)."""
    last_error: str | None
    """The last failure, by type and HTTP status only (None: none since it was opened)."""
    permanent: bool
    """The last failure was one that waiting will not mend (a refused key, an unknown model)."""
    fallbacks: int
    """Lines written as a cut of their input because the summarizer failed, since opening."""


class Breaker:
    """Counts failures in a row and says whether an ask may be sent now (`admit`)."""

    def __init__(
        self,
        *,
        open_after: int = OPEN_AFTER,
        probe: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`probe`: False keeps it open once opened (a command that stops when the summarizer
        is down must not pass for well because one later ask was answered)."""
        self._open_after, self._probe = open_after, probe
        self._clock = clock
        self._state: State = "closed"
        self._failures = 0
        self._since: datetime | None = None
        self._last: str | None = None
        self._permanent = False
        self._cool_down = FIRST_COOL_DOWN
        self._next_probe = 0.0
        self.answers = 0
        """Asks answered since it was made: what was written before one may be asked again."""

    @property
    def down(self) -> bool:
        """Open or probing: the lines a cut needs fall back at once."""
        return self._state != "closed"

    def admit(self) -> bool:
        """Whether an ask may be sent now. While open, one probe after the cool-down: it
        must end with `answered`, `failed` or `released`."""
        if self._state == "closed":
            return True
        if self._state == "open" and self._probe and self._clock() >= self._next_probe:
            self._state = "probing"
            return True
        return False

    def answered(self) -> None:
        """An ask was answered: the breaker closes."""
        self.answers += 1
        if self._state != "closed":
            log.warning(
                "summarizer answers again after %d failures in a row: breaker closed",
                self._failures,
            )
            self._since = datetime.now(UTC)
        self._state, self._failures, self._permanent = "closed", 0, False
        self._cool_down = FIRST_COOL_DOWN

    def failed(self, error: str, *, permanent: bool) -> None:
        """An ask failed (`error` as `describe` gives it); `permanent`: waiting will not mend it."""
        self._failures += 1
        self._last, self._permanent = error, permanent
        if self._state == "probing":
            self._cool_down = min(self._cool_down * 2, LONGEST_COOL_DOWN)
            self._reopen()
        elif self._state == "closed" and (permanent or self._failures >= self._open_after):
            log.warning(
                "summarizer down after %d failures in a row (last: %s%s): breaker open, lines "
                "fall back to a cut of their input until it answers again",
                self._failures,
                error,
                ", which waiting will not mend" if permanent else "",
            )
            self._since = datetime.now(UTC)
            self._reopen()

    def released(self) -> None:
        """A probe ended without an answer or a failure (cancelled): another may go."""
        if self._state == "probing":
            self._state = "open"

    def health(self, *, fallbacks: int) -> Health:
        return Health(
            state=self._state,
            failures=self._failures,
            since=self._since,
            last_error=self._last,
            permanent=self._permanent,
            fallbacks=fallbacks,
        )

    def _reopen(self) -> None:
        self._state = "open"
        self._next_probe = self._clock() + self._cool_down
