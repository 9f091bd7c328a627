"""The viewer's benchmark, small: it times the page, every level down to a message and
`show --json` on one store, and its table says whether the goal was met."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

pytest.importorskip("starlette", reason="the viewer needs the serve extra")

from benchmarks import scale, viewer
from history import HistorySettings


@pytest.mark.slow
def test_a_quick_run_times_the_page_and_each_level_beside_show_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = HistorySettings(summarizer="scripted", tail=(200, 400), outline=(2_000, 4_000))
    monkeypatch.setattr(scale, "settings", lambda: small)  # budgets that cut from the start
    db = tmp_path / "v.sqlite"
    thread = anyio.run(lambda: viewer.build(300, db, slice=100))
    run = viewer.measure(db, thread, repeats=1)
    assert run.messages == 300 and run.depth >= 4
    assert len(run.levels) == run.depth  # from the top node down to a single message
    timed = (run.page, run.opened, run.searched, run.time_page, run.show_json, *run.levels)
    assert min(t.wall for t in timed) > 0 and min(t.cpu for t in timed) > 0
    report = viewer.table(run)
    assert f"open level {run.depth - 1} |" in report and "| open level 0 |" in report
    assert ("met" if run.met else "missed") in report.splitlines()[0]
