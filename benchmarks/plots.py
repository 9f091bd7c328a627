"""The report's plots (PNG, matplotlib's Agg backend). Without matplotlib there are none."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cost import Run
from .latency import Load
from .speed import ViewTime

log = logging.getLogger(__name__)

STYLE = {
    "chat-outline": ("tab:red", "o"),
    "full-history": ("tab:gray", "s"),
    "rolling-window": ("tab:olive", "v"),
    "langchain-middleware": ("tab:blue", "^"),
    "langchain-summary-buffer": ("tab:cyan", "D"),
    "llamaindex-summary-buffer": ("tab:purple", "P"),
}


SMOOTH = 50
"""Turns averaged in the cost-per-turn plot: single turns jump at every cut or summary."""


def _moving(values: Sequence[float], window: int) -> list[float]:
    out, total = [], 0.0
    for k, value in enumerate(values):
        total += value - (values[k - window] if k >= window else 0.0)
        out.append(total / min(k + 1, window))
    return out


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        log.warning("matplotlib is not installed: no plots (pip install -e '.[bench]')")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cost_per_turn(runs: Sequence[Run], corpus: str, budget: int, path: Path) -> Path | None:
    """Cost and prompt size per turn over one long conversation, one line per strategy."""
    plt = _pyplot()
    chosen = [r for r in runs if r.corpus == corpus and r.budget in (budget, None)]
    if plt is None or not chosen:
        return None
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    for run in chosen:
        color, _ = STYLE.get(run.strategy, ("black", "x"))
        turns = run.turns[: run.first]
        x = range(1, len(turns) + 1)
        costs = _moving([t.anthropic_cost for t in turns], SMOOTH)
        top.plot(x, costs, color=color, lw=1.2, label=run.strategy)
        bottom.plot(x, [t.tokens for t in turns], color=color, lw=0.6, label=run.strategy)
    top.set_yscale("log")
    top.set_ylabel(f"cost per turn, mean of the last {SMOOTH} turns")
    top.set_title(f"{corpus}: cost per turn at a {budget:,}-token budget (Anthropic-style cache)")
    bottom.set_yscale("log")
    bottom.set_ylabel("prompt tokens")
    bottom.set_xlabel("turn (one message each)")
    top.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def cost_recall(runs: Sequence[Run], path: Path) -> Path | None:
    """Mean cost per turn against recall, one panel per corpus, one line per strategy."""
    plt = _pyplot()
    corpora = list(dict.fromkeys(r.corpus for r in runs))
    if plt is None or not corpora:
        return None
    figure, axes = plt.subplots(1, len(corpora), figsize=(5.5 * len(corpora), 4.8), squeeze=False)
    for axis, corpus in zip(axes[0], corpora, strict=True):
        for name in dict.fromkeys(r.strategy for r in runs):
            points = sorted(
                (r for r in runs if r.corpus == corpus and r.strategy == name),
                key=lambda r: r.total("anthropic_cost"),
            )
            if not points:
                continue
            color, marker = STYLE.get(name, ("black", "x"))
            costs = [r.total("anthropic_cost") for r in points]
            axis.plot(costs, [r.recall for r in points], color=color, marker=marker, label=name)
            searched = [(c, r.search) for c, r in zip(costs, points, strict=True) if r.search]
            if searched:
                axis.scatter(
                    [c for c, _ in searched],
                    [s for _, s in searched],
                    facecolors="none",
                    edgecolors=color,
                    marker=marker,
                    label=f"{name} (search)",
                )
        axis.set_xscale("log")
        axis.set_ylim(-0.05, 1.05)
        axis.set_title(corpus)
        axis.set_xlabel("mean cost per turn (log)")
        axis.set_ylabel("share of early facts recalled")
    axes[0][0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def speed(
    views: Sequence[ViewTime], loads: Sequence[Load], delay: float, path: Path
) -> Path | None:
    """View time against thread length, and summarizer calls a second against threads."""
    plt = _pyplot()
    if plt is None or not (views and loads):
        return None
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.plot([v.messages for v in views], [v.seconds * 1000 for v in views], marker="o")
    left.set_xscale("log")
    left.set_ylim(bottom=0)
    left.set_xlabel("messages in the thread (log)")
    left.set_ylabel("view assembly (ms, median)")
    left.set_title("view assembly by thread length")
    threads = [load.threads for load in loads]
    right.plot(threads, [load.asks_per_second for load in loads], marker="o", label="measured")
    right.plot(threads, [load.bound(delay) for load in loads], ls="--", label="concurrency bound")
    right.set_xscale("log")
    right.set_xlabel("threads at once (log)")
    right.set_ylabel("summarizer calls per second")
    right.set_title(f"a {delay * 1000:.0f} ms summarizer")
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
