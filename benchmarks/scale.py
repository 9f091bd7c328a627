"""The scale run: a long ingest into one thread and into many, to show nothing grows with a thread.

- Ingest rate: messages through `message_created` and processing, per slice of `slice` messages
  (the slice's messages handed over, then waited for), into one thread and dealt over `threads`
  threads: by the wall clock, and in this process's CPU time per message, which other work on
  the machine does not inflate. A flat cost means storing and processing the millionth message
  of a thread costs what the hundredth does.
- Reads at checkpoints of the one-thread run (1k, 10k, 100k messages): `view()` (the prompt an
  agent is sent, built by the plugin itself), `zoom` into the outline's first line, and
  `search` for two words, each the median CPU time of `repeats`.
- Peak memory: the largest resident size of the process that ran it (the run is started in a
  process of its own by `python -m benchmarks`, so nothing else counts in it; see `peak_mib`).

`python -m benchmarks.scale --messages 100000 --out FILE.json` runs it alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

from history import search, view, zoom
from history.contract import Message
from history.lines import label
from history.plugin import History

from .corpora import synthetic_corpus
from .speed import settings, spread

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Ingest:
    """One ingest: the rate of every slice of it."""

    threads: int
    messages: int
    slice: int
    rates: tuple[float, ...]
    """Messages per second of each slice, in order (wall clock)."""
    cpu: tuple[float, ...]
    """Milliseconds of this process's CPU time per message of each slice (all its threads):
    what the plugin spent, whatever else the machine was running."""
    asks: tuple[float, ...] = ()
    """Lines asked of the summarizer per message of each slice: how much of it was cuts."""

    @property
    def growth(self) -> float:
        """How much more CPU time a message of the last slice took than one of the first."""
        return self.cpu[-1] / self.cpu[0]

    @property
    def wall_growth(self) -> float:
        """How much longer the last slice took than the first, by the wall clock."""
        return self.rates[0] / self.rates[-1]


@dataclass(frozen=True, kw_only=True)
class Reads:
    """The read side at one thread length: median seconds of each read."""

    messages: int
    view: float
    zoom: float
    search: float
    lines: int
    """Outline lines the view holds."""


@dataclass(frozen=True, kw_only=True)
class Scale:
    ingests: tuple[Ingest, ...]
    reads: tuple[Reads, ...]
    peak_mib: float
    """The run's largest resident size (MiB)."""
    seconds: float


async def _timed(read: Callable[[], Awaitable[object]], repeats: int) -> float:
    """The median CPU time of a read (this process's, its threads included): on a machine
    shared with other work, the wall clock of a read of milliseconds is mostly waiting."""
    spent = []
    for _ in range(repeats):
        started = time.process_time()
        await read()
        spent.append(time.process_time() - started)
    return statistics.median(spent)


async def _reads(history: History, thread: str, count: int, repeats: int) -> Reads:
    outline = await history.outline(thread)
    first = outline.lines[0] if outline and outline.lines else (0, 0, 0, None)
    where = label(first[0], first[1])
    return Reads(
        messages=count,
        view=await _timed(lambda: view(history, thread, agent="assistant"), repeats),
        zoom=await _timed(lambda: zoom(history, thread, where), repeats),
        search=await _timed(lambda: search(history, thread, "invoice billing"), repeats),
        lines=len(outline.lines) if outline else 0,
    )


async def ingest(
    messages: Sequence[Message],
    path: Path,
    *,
    threads: int,
    slice: int,
    checkpoints: Sequence[int] = (),
    repeats: int = 5,
) -> tuple[Ingest, list[Reads]]:
    """Hand `messages` over a slice at a time, each waited for; at each checkpoint (a count of
    messages handed over) the first thread's reads are timed, off the slice's clock."""
    dealt = spread(messages, threads)
    rates, cpu, asks, reads = [], [], [], []
    async with History(settings(), store=path) as history:
        for start in range(0, len(dealt), slice):
            stops = [p for p in checkpoints if start < p < start + slice] + [start + slice]
            spent, used, done = 0.0, 0.0, start
            asked = history.counters.asks
            for stop in stops:
                began, busy = time.perf_counter(), time.process_time()
                for m in dealt[done:stop]:
                    await history.message_created(m)
                await history.wait()
                spent += time.perf_counter() - began
                used += time.process_time() - busy
                done = min(stop, len(dealt))
                if done in checkpoints:
                    reads.append(await _reads(history, dealt[0].thread, done, repeats))
            rates.append((done - start) / spent)
            cpu.append(used * 1000 / (done - start))
            asks.append((history.counters.asks - asked) / (done - start))
            log.info(
                "%d thread(s): %d messages, %.0f/s, %.2f ms CPU each",
                threads,
                done,
                rates[-1],
                cpu[-1],
            )
    ingested = Ingest(
        threads=threads,
        messages=len(dealt),
        slice=slice,
        rates=tuple(rates),
        cpu=tuple(cpu),
        asks=tuple(asks),
    )
    return ingested, reads


async def run(
    messages: int, *, threads: int, slice: int, checkpoints: Sequence[int], folder: Path
) -> Scale:
    """Both ingests, the reads of the one-thread one, and the peak memory of this process."""
    started = time.perf_counter()
    corpus = synthetic_corpus(messages).conversations[0].messages[:messages]
    one, reads = await ingest(
        corpus, folder / "one.sqlite", threads=1, slice=slice, checkpoints=checkpoints
    )
    many, _ = await ingest(corpus, folder / "many.sqlite", threads=threads, slice=slice)
    return Scale(
        ingests=(one, many),
        reads=tuple(reads),
        peak_mib=peak_mib(),
        seconds=time.perf_counter() - started,
    )


def peak_mib() -> float:
    """The largest resident size of this process's memory, in MiB. On Linux it is read from
    `/proc/self/status` (`VmHWM`): `ru_maxrss` keeps the peak of the process that started this
    one, so a scale run started by the 3 GiB process of the whole benchmark reported 3 GiB."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:  # no /proc: ru_maxrss, in bytes on macOS and in KiB elsewhere
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024
    [kib] = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(kib) / 1024


def in_process(
    messages: int, *, threads: int, slice: int, checkpoints: Sequence[int], folder: Path
) -> Scale:
    """The scale run in a process of its own, so that its peak memory is its own."""
    import subprocess

    out = folder / "scale.json"
    command = [
        sys.executable,
        "-m",
        "benchmarks.scale",
        "--messages",
        str(messages),
        "--threads",
        str(threads),
        "--slice",
        str(slice),
        "--out",
        str(out),
        "--checkpoints",
        ",".join(str(p) for p in checkpoints),
    ]
    subprocess.run(command, check=True)
    return load(out)


def load(path: Path) -> Scale:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Scale(
        ingests=tuple(
            Ingest(**{**i, **{k: tuple(i.get(k, ())) for k in ("rates", "cpu", "asks")}})
            for i in data["ingests"]
        ),
        reads=tuple(Reads(**r) for r in data["reads"]),
        peak_mib=data["peak_mib"],
        seconds=data["seconds"],
    )


def main(argv: Sequence[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__)
    top.add_argument("--messages", type=int, default=100_000)
    top.add_argument("--threads", type=int, default=1_000)
    top.add_argument("--slice", type=int, default=10_000)
    top.add_argument("--checkpoints", default="1000,10000,100000")
    top.add_argument("--out", type=Path, required=True)
    args = top.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    checkpoints = [int(p) for p in args.checkpoints.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        done = anyio.run(
            lambda: run(
                args.messages,
                threads=args.threads,
                slice=args.slice,
                checkpoints=checkpoints,
                folder=Path(scratch),
            )
        )
    args.out.write_text(json.dumps(asdict(done)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
