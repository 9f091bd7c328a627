"""`python -m benchmarks [--out DIR] [--quick] [--only cost | retrieval | --scale]
[--budgets N,N] [--corpora NAME,NAME] [--postgres URL] [--jsonl FILE ...]`: run, report, plot."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio

from . import (
    cost,
    install_hint,
    latency,
    plots,
    readers,
    retrieval,
    scale,
    size,
    speed,
    startup,
    targets,
)
from .cache import Prices
from .config import FULL, QUICK, Config
from .corpora import Corpus, chitchat_corpus, jsonl_corpus, sharegpt_corpus, synthetic_corpus
from .fakes import Behaviour
from .report import Results, render
from .scale import Scale
from .strategies import available

log = logging.getLogger("benchmarks")


def corpora(config: Config) -> tuple[list[Corpus], dict[str, str]]:
    """The corpora this run uses, and those it cannot (a dataset package not installed)."""
    found = [synthetic_corpus(config.synthetic)] if config.synthetic else []
    skipped: dict[str, str] = {}
    for name, count, load in (
        ("chitchat", config.chitchat, chitchat_corpus),
        ("sharegpt", config.sharegpt, sharegpt_corpus),
    ):
        if not count:
            continue
        try:
            found.append(load(count, longest=config.longest))
        except ImportError as exc:
            skipped[name] = f"not installed ({exc.name}): {install_hint(exc.name)}"
            log.warning("skipping the %s corpus: %s is not installed", name, exc.name)
    found += [jsonl_corpus(path) for path in config.jsonl]
    return found, skipped


async def run(config: Config, out: Path, *, command: str) -> Results:
    """Run every benchmark of `config` and write the report and plots into `out`."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    found, skipped = corpora(config)
    strategies, missing = available()
    skipped.update(missing)
    runs = await cost.run_all(
        found, strategies, config.budgets, behaviour=config.behaviour, prices=config.prices
    )
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        folder = Path(scratch)
        base = synthetic_corpus(max(config.speed, config.memory, *config.views)).conversations[0]
        messages = base.messages
        log.info("throughput over %d messages", config.speed)
        throughputs = [
            await speed.throughput(messages[: config.speed], folder, threads=n) for n in (1, 10)
        ]
        postgres = []
        if config.postgres:
            for n in (1, 10):
                postgres.append(
                    await speed.postgres_throughput(
                        messages[: config.speed], config.postgres, threads=n
                    )
                )
        log.info("view assembly at %s messages", config.views)
        checked = await speed.fill_matches_plugin(messages[: config.views[0]], folder)
        views = await speed.view_times(messages, config.views, folder, repeats=config.repeats)
        memory = await speed.peak_memory(messages[: config.memory], folder / "memory.sqlite")
        log.info("latency with a %.0f ms summarizer", config.delay * 1000)
        cuts = await latency.cuts(config.cut_messages, folder, delay=config.delay)
        loads = [
            await latency.load(threads, per, folder, delay=config.delay)
            for threads, per in zip(config.threads, config.per_thread, strict=True)
        ]
        beside = [
            await readers.measure(
                messages,
                folder,
                stored=config.views[0],
                writers=config.readers,
                per_writer=config.reader_messages,
                views=config.reader_views,
                budget=budget,
            )
            for budget in (4_000, None)
        ]
        log.info("start-up of the command, %d runs each", config.startup)
        startups = startup.measure(folder, repeats=config.startup) if config.startup else []
        found_retrieval = await _retrieval(config, found, folder)
        sizes = await size.measure(found, folder, postgres=config.postgres)
        grown = _scale(config, folder) if config.scale else None
    drawn = {
        "cost_per_turn": plots.cost_per_turn(
            runs, found[0].name, config.reference, out / "cost-per-turn.png"
        ),
        "cost_recall": plots.cost_recall(runs, out / "cost-recall.png"),
        "speed": plots.speed(views, loads, config.delay, out / "speed.png"),
    }
    results = Results(
        config=config,
        command=command,
        corpora=found,
        skipped=skipped,
        runs=runs,
        throughputs=throughputs,
        fill_checked=checked,
        views=views,
        memory=memory,
        cuts=cuts,
        loads=loads,
        targets=[
            *targets.evaluate(
                runs,
                throughputs,
                views,
                reference=config.reference,
                postgres=postgres,
                scale=grown,
            ),
            *([startup.target(startups)] if startups else []),
            *retrieval.targets(found_retrieval, real=_real(found)),
            size.target(sizes),
            readers.target(beside),
        ],
        readers=beside,
        retrieval=found_retrieval,
        sizes=sizes,
        startups=startups,
        postgres=postgres,
        scale=grown,
        plots={name: path for name, path in drawn.items() if path is not None},
        seconds=time.perf_counter() - started,
        load=load,
    )
    await anyio.Path(out / "report.md").write_text(render(results), encoding="utf-8")
    return results


async def _retrieval(config: Config, found: list[Corpus], folder: Path) -> retrieval.Retrieval:
    log.info("retrieval: %d questions of each kind per conversation", config.questions)
    return await retrieval.run(
        found,
        folder,
        questions=config.questions,
        sizes=config.search_sizes,
        queries=config.search_queries,
        postgres=config.postgres,
    )


def _real(found: Sequence[Corpus]) -> list[str]:
    return [c.name for c in found if c.name != "synthetic"]


async def run_retrieval(config: Config, out: Path, *, command: str) -> Results:
    """Only the retrieval benchmark (`--only retrieval`), written into `out` as its report."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    found, skipped = corpora(config)
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        measured = await _retrieval(config, found, Path(scratch))
    results = Results(
        config=config,
        command=command,
        corpora=found,
        skipped=skipped,
        runs=[],
        retrieval=measured,
        targets=retrieval.targets(measured, real=_real(found)),
        seconds=time.perf_counter() - started,
        load=load,
    )
    await anyio.Path(out / "report.md").write_text(render(results), encoding="utf-8")
    return results


async def run_cost(config: Config, out: Path, *, command: str) -> Results:
    """Only the cost benchmark (`--only cost`): every strategy at every budget, both worlds,
    with its targets and plots, in a report of its own."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    found, skipped = corpora(config)
    strategies, missing = available()
    skipped.update(missing)
    runs = await cost.run_all(
        found, strategies, config.budgets, behaviour=config.behaviour, prices=config.prices
    )
    drawn = {
        "cost_per_turn": plots.cost_per_turn(
            runs, found[0].name, config.reference, out / "cost-per-turn.png"
        ),
        "cost_recall": plots.cost_recall(runs, out / "cost-recall.png"),
    }
    results = Results(
        config=config,
        command=command,
        corpora=found,
        skipped=skipped,
        runs=runs,
        targets=targets.evaluate(runs, (), (), reference=config.reference),
        plots={name: path for name, path in drawn.items() if path is not None},
        seconds=time.perf_counter() - started,
        load=load,
    )
    await anyio.Path(out / "report.md").write_text(render(results), encoding="utf-8")
    return results


async def run_size(config: Config, out: Path, *, command: str) -> Results:
    """Only the store-size benchmark (`--only size`), written into `out` as its report."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    found, skipped = corpora(config)
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        sizes = await size.measure(found, Path(scratch), postgres=config.postgres)
    results = Results(
        config=config,
        command=command,
        corpora=found,
        skipped=skipped,
        runs=[],
        sizes=sizes,
        targets=[size.target(sizes)],
        seconds=time.perf_counter() - started,
        load=load,
    )
    await anyio.Path(out / "report.md").write_text(render(results), encoding="utf-8")
    return results


def _scale(config: Config, folder: Path) -> Scale:
    log.info("the scale run: %d messages, one thread and %d", config.scale, config.scale_threads)
    return scale.in_process(
        config.scale,
        threads=config.scale_threads,
        slice=config.scale_slice,
        checkpoints=config.scale_checkpoints,
        folder=folder,
    )


async def run_scale(config: Config, out: Path, *, command: str) -> Results:
    """Only the scale run, with its targets, in a report of its own."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        grown = _scale(config, Path(scratch))
    results = Results(
        config=config,
        command=command,
        corpora=(),
        skipped={},
        runs=(),
        scale=grown,
        targets=[targets.ingest_flat(grown)],
        seconds=time.perf_counter() - started,
        load=load,
    )
    await anyio.Path(out / "report.md").write_text(render(results), encoding="utf-8")
    return results


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="chat-outline against the memories users would pick instead: cost, cache, "
        "recall, speed and latency, written as a Markdown report with plots.",
    )
    top.add_argument("--out", type=Path, default=Path("bench-report"), help="report folder")
    top.add_argument("--quick", action="store_true", help="small sizes: about a minute")
    top.add_argument("--scale", action="store_true", help="only the scale run (100,000 messages)")
    top.add_argument(
        "--postgres", metavar="URL", help="also measure throughput on this PostgreSQL server"
    )
    top.add_argument(
        "--only",
        choices=["cost", "retrieval", "size"],
        help="run one benchmark alone: cost (and cache, recall), retrieval (search) or size (the "
        "store against its input)",
    )
    top.add_argument(
        "--budgets", type=_numbers, help="the cost benchmark's budgets, e.g. 16000,32000"
    )
    top.add_argument(
        "--corpora",
        type=lambda text: tuple(text.split(",")),
        help="only these corpora, e.g. synthetic,chitchat (the --jsonl files always run)",
    )
    top.add_argument(
        "--jsonl", type=Path, action="append", default=[], help="more conversations (JSONL)"
    )
    top.add_argument("--cache-read", type=float, default=Prices().read, help="price (0.1)")
    top.add_argument("--cache-write", type=float, default=Prices().write, help="price (1.25)")
    top.add_argument("--share", type=float, default=Behaviour().share, help="summary share")
    top.add_argument("--cap", type=int, default=Behaviour().cap, help="summary cap in tokens")
    return top


def _numbers(text: str) -> tuple[int, ...]:
    try:
        numbers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
    if not numbers or min(numbers) <= 0:
        raise argparse.ArgumentTypeError(f"budgets are positive token counts: {text!r}")
    return numbers


def _only(config: Config, names: tuple[str, ...]) -> Config:
    """`config` with only the corpora `names` (of synthetic, chitchat, sharegpt)."""
    unknown = set(names) - {"synthetic", "chitchat", "sharegpt"}
    if unknown:
        raise SystemExit(f"unknown corpus {sorted(unknown)[0]!r}: synthetic, chitchat, sharegpt")
    return replace(
        config,
        synthetic=config.synthetic if "synthetic" in names else 0,
        chitchat=config.chitchat if "chitchat" in names else 0,
        sharegpt=config.sharegpt if "sharegpt" in names else 0,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    # The offline request that reads pydantic-ai's framing never leaves the process (`Wire`).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = replace(
        QUICK if args.quick else FULL,
        jsonl=tuple(args.jsonl),
        prices=Prices(read=args.cache_read, write=args.cache_write),
        behaviour=Behaviour(share=args.share, cap=args.cap),
        postgres=args.postgres,
    )
    if args.budgets:
        reference = config.reference if config.reference in args.budgets else args.budgets[0]
        config = replace(config, budgets=args.budgets, reference=reference)
    if args.corpora:
        config = _only(config, args.corpora)
    if args.scale and not config.scale:
        config = replace(
            config,
            scale=10_000,
            scale_slice=1_000,
            scale_threads=100,
            scale_checkpoints=(1_000, 10_000),
        )
    command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
    chosen = {"cost": run_cost, "retrieval": run_retrieval, "size": run_size}.get(
        args.only or "", run
    )
    chosen = run_scale if args.scale else chosen
    results = anyio.run(lambda: chosen(config, args.out, command=command))
    for target in results.targets:
        print(f"{'met   ' if target.met else 'MISSED'}  {target.goal}")
    print(f"report: {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
