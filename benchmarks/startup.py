"""How long the command takes to answer: `--help` and the read commands on a small store,
each timed in a fresh interpreter against `python -c pass` timed in the same run.

The target is half a second for `--help` and a read command (`threads`, `show`), interpreter
start-up included. It is judged on the processor time the command takes, which other work on
the machine does not inflate much; the wall time, which it does, is reported beside it.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .targets import Target

TARGET = 0.5
"""Seconds: `--help` and a read command on a small store, interpreter start-up included."""
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "launch.jsonl"
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("threads",),
    ("threads", "--json"),
    ("show", "t"),
    ("prompt", "t"),
)
"""The command lines timed; each read command is given the small store."""
READS = ("threads", "show", "prompt", "zoom", "search", "stats")


@dataclass(frozen=True, kw_only=True)
class Startup:
    """One command line's time to answer, the median of some runs."""

    command: str
    seconds: float
    """Wall time of the whole process."""
    cpu: float
    """Processor time of the whole process (user and system)."""
    baseline: float
    """`python -c pass`, timed in the same run: the interpreter's own start (wall)."""
    baseline_cpu: float
    """`python -c pass`: processor time."""

    @property
    def overhead(self) -> float:
        """Processor time over the interpreter's own start."""
        return self.cpu - self.baseline_cpu


def _time(argv: Sequence[str], repeats: int, cwd: Path) -> tuple[float, float]:
    """The median wall and processor times of some runs of a command line."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def _env() -> dict[str, str]:
    """This checkout's code, wherever the command runs."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def measure(
    folder: Path, *, repeats: int = 5, commands: Sequence[Sequence[str]] = COMMANDS
) -> list[Startup]:
    """Time each command line on a store holding the small example chat (16 messages)."""
    db = folder / "startup.sqlite"
    command = [sys.executable, "-m", "history.cli"]
    subprocess.run(
        [*command, "ingest", str(EXAMPLE), "--tail", "40,80", "--db", str(db)],
        cwd=folder,
        env=_env(),
        capture_output=True,
        check=True,
    )
    baseline, baseline_cpu = _time([sys.executable, "-c", "pass"], repeats, folder)
    found = []
    for argv in commands:
        store = ["--db", str(db)] if argv[0] in READS else []
        seconds, cpu = _time([*command, *argv, *store], repeats, folder)
        found.append(
            Startup(
                command=" ".join(["chat-outline", *argv]),
                seconds=seconds,
                cpu=cpu,
                baseline=baseline,
                baseline_cpu=baseline_cpu,
            )
        )
    return found


def target(startups: Sequence[Startup]) -> Target:
    """`--help` and the read commands that need no model library answer within TARGET."""
    timed = [s for s in startups if not s.command.startswith("chat-outline prompt")]
    return Target(
        goal=f"`--help` and a read command on a small store answer within {TARGET} s",
        met=all(s.cpu <= TARGET for s in timed),
        numbers=", ".join(f"`{s.command}` {s.cpu:.2f} s" for s in timed)
        + f" of processor time (`python -c pass` {startups[0].baseline_cpu:.2f} s)",
        why="the command's own imports: what it loads before answering is listed by "
        "`python -X importtime -m history.cli threads`.",
    )


def report(startups: Sequence[Startup], repeats: int) -> list[str]:
    """The report's section: a table, and what `prompt` loads that the others do not."""
    if not startups:
        return []
    lines = [
        "## 3. Start-up of the command",
        "",
        f"Each command line run in a fresh interpreter on a store of 16 messages, the median of "
        f"{repeats} runs, against `python -c pass` timed in the same run "
        f"({startups[0].baseline_cpu * 1000:.0f} ms of processor time, "
        f"{startups[0].baseline * 1000:.0f} ms of wall time). Target: {TARGET:.1f} s for "
        "`--help` and a read command, start-up included, judged on processor time: the wall "
        "time grows with whatever else the machine runs. `prompt` renders the view with "
        "pydantic-ai's messages, so it alone imports pydantic-ai.",
        "",
        "| command | processor (s) | over `python -c pass` | wall (s) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{s.command}` | {s.cpu:.3f} | {s.overhead:+.3f} | {s.seconds:.3f} |" for s in startups
    ]
    return [*lines, ""]
