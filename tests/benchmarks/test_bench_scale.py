"""The benchmark's scale run, small: its slices, its reads at each checkpoint, and its report.

The figures themselves are the benchmark's (`python -m benchmarks --scale`); here only that the
run measures what it says, and that the report and its target show it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import scale, targets
from benchmarks.config import QUICK
from benchmarks.report import Results, render
from history import History, HistorySettings

from ..conftest import exchange

pytestmark = pytest.mark.slow


@pytest.mark.anyio
async def test_a_small_scale_run_times_every_slice_and_reads_at_each_checkpoint(
    tmp_path: Path,
) -> None:
    done = await scale.run(120, threads=4, slice=40, checkpoints=(20, 120), folder=tmp_path)

    one, many = done.ingests
    assert (one.threads, many.threads) == (1, 4)
    assert all(i.messages == 120 and len(i.rates) == 3 for i in done.ingests)
    assert all(rate > 0 for i in done.ingests for rate in i.rates)
    assert all(len(i.cpu) == 3 and min(i.cpu) > 0 for i in done.ingests)
    assert all(len(i.asks) == 3 and min(i.asks) >= 0 for i in done.ingests)
    assert [r.messages for r in done.reads] == [20, 120]
    assert all(r.view > 0 and r.zoom > 0 and r.search > 0 for r in done.reads)
    assert done.peak_mib > 0

    verdict = targets.ingest_flat(done)
    assert verdict.met == all(i.growth <= 1.3 for i in done.ingests)
    report = render(
        Results(
            config=QUICK,
            command="test",
            corpora=(),
            skipped={},
            runs=(),
            scale=done,
            targets=[verdict],
        )
    )
    assert "### The scale run" in report and verdict.goal in report
    assert "| 120 | " in report  # the reads at the last checkpoint
    assert "lines asked/msg" in report
    back = tmp_path / "scale.json"
    back.write_text(json.dumps(asdict(done)), encoding="utf-8")
    assert scale.load(back) == done


@pytest.mark.anyio
async def test_each_slice_counts_the_lines_its_cuts_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = HistorySettings(summarizer="scripted", tail=(40, 80), outline=(300, 600), kept=1)
    monkeypatch.setattr(scale, "settings", lambda: small)  # budgets that cut from the start
    messages = exchange([f"point {k}: the estimate moved to {k * 7} hours" for k in range(30)])
    ingested, _ = await scale.ingest(messages, tmp_path / "s.sqlite", threads=1, slice=20)
    async with History(small, store=tmp_path / "again.sqlite") as history:
        for m in messages:
            await history.message_created(m)
        await history.wait()
        asked = history.counters.asks
    assert len(ingested.asks) == 3 and ingested.asks[0] == 0 < min(ingested.asks[1:])
    assert sum(a * 20 for a in ingested.asks) == pytest.approx(asked)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
def test_the_peak_memory_of_a_started_process_is_its_own() -> None:
    held = bytearray(b"x") * (300 << 20)  # every page written, so resident
    assert scale.peak_mib() >= 300  # the premise: this process has held 300 MiB
    code = "from benchmarks.scale import peak_mib; print(peak_mib())"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    del held
    assert 0 < float(done.stdout) < 200  # ru_maxrss says 300 or more: the parent's


def test_a_missed_flat_ingest_says_what_grows_in_each_run() -> None:
    def ingest(threads: int, last: float) -> scale.Ingest:
        return scale.Ingest(
            threads=threads,
            messages=100_000,
            slice=10_000,
            rates=(300.0, 200.0),
            cpu=(2.5, last),
            asks=(0.6, 0.6),
        )

    def why(*ingests: scale.Ingest) -> str:
        run = scale.Scale(ingests=ingests, reads=(), peak_mib=1.0, seconds=1.0)
        return targets.ingest_flat(run).why

    long_thread, many_threads = ingest(1, 3.5), ingest(1_000, 3.5)
    assert "B-tree of postings" in why(long_thread) and "cheap start" not in why(long_thread)
    assert "cheap start" in why(many_threads) and "B-tree" not in why(many_threads)
    assert why(ingest(1, 3.0), ingest(1_000, 3.0)) == ""  # 1.2x: met, nothing to explain
