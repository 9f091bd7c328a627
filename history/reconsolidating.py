"""Re-summaries: a thread's lines asked again of a summarizer, written as their next generation
(docs/generations.md, section 4). Which nodes are asked is decided before the first call, from
the texts as they stand, so a dry run counts exactly the calls the run makes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict, Unpack

import anyio

from ._generated import Generation
from ._generations import Tree, children, current, next_generation, tree
from ._names import Display, display, named_line
from .contract import Ask, NodeKey, Outline, Reply, Task
from .errors import ConflictError, InputError, SummarizerError
from .lines import label, size
from .pins import model_key
from .processors.summarize import leaf_task, merge_task
from .settings import HistorySettings
from .store import Store
from .store import _changes as changes
from .summarizer import (
    Summarizer,
    checked_summarizer,
    request,
    summarizer_for,
    summarizer_key,
    write,
)

log = logging.getLogger(__name__)

Does = Literal["verbatim", "join", "ask"]
TRIES = 10
"""How often a re-summary is written again when the thread moved under it before it fails
(with the answers it received: only its write is made again, after a pause that doubles)."""
TIMEOUT = 60.0
"""Seconds one request may take."""


class Options(TypedDict):
    """`History.reconsolidate`'s keyword arguments."""

    summarizer: str | Summarizer
    """The summarizer asked: a name as `HistorySettings.summarizer` takes, or a Summarizer."""
    depth: NotRequired[int]
    """Ask the nodes this many levels down from each target too (1: the targets alone)."""
    fallbacks: NotRequired[bool]
    """Ask the lines that fell back to a cut, and their parents (no label, no depth)."""
    dry_run: NotRequired[bool]
    """Ask nothing and write nothing: count the calls the run would make."""
    now: NotRequired[bool]
    """The outline an agent is sent takes the new generations at once, not at the next cut."""
    max_failures: NotRequired[int]
    """Failed requests after which the run stops with a SummarizerError, writing nothing."""


@dataclass(frozen=True, kw_only=True)
class Resummary:
    """What a re-summary did, or would do (`dry_run`)."""

    thread: str
    calls: int
    """Model calls: made, or that the run would make."""
    asked: tuple[str, ...]
    """The labels of the nodes asked again, in the order asked."""
    rewritten: int = 0
    """Generations written (0 for a dry run)."""


@dataclass(kw_only=True)
class _Asking:
    """One re-summary's summarizer and what it received, kept when it is made again."""

    summarizer: Summarizer
    settings: HistorySettings
    timeout: float
    max_failures: int
    answers: dict[tuple[str, ...], Reply] = field(default_factory=dict)
    failures: int = 0

    async def ask(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        key = tuple(prompts)
        if key in self.answers:
            return self.answers[key]
        while True:
            try:
                reply = await request(self.summarizer, task, prompts, answers, seconds=self.timeout)
            except SummarizerError as exc:
                self.failures += 1
                log.warning(
                    "thread %r: a re-summary request failed (%d of %d)",
                    task.thread,
                    self.failures,
                    self.max_failures,
                    extra={"chat_thread": task.thread},
                )
                if self.failures >= self.max_failures:
                    raise SummarizerError(
                        f"summarizer {self.summarizer.name!r} failed {self.failures} times; "
                        f"nothing was written ({exc})"
                    ) from exc
                continue
            self.answers[key] = reply
            return reply


def parse_label(thread: str, text: str) -> NodeKey:
    """A shared node's key from its label `"{first}+{count}"`; an InputError otherwise."""
    first, plus, count = text.strip().partition("+")
    ok = plus and first.isdigit() and count.isdigit() and int(count) > 0
    if not ok or int(count) & (int(count) - 1) or int(first) % int(count):
        raise InputError(f"{text!r} is not a label of thread {thread!r}, like '0+4'", field="label")
    n = int(count)
    return NodeKey("", n.bit_length() - 1, int(first) // n)


def targets(
    found: Tree, outline: Outline, label_: str | None, *, depth: int, fallbacks: bool
) -> list[NodeKey]:
    """The nodes a re-summary does, lowest level first (section 4.1)."""
    if fallbacks:
        chosen = {k for k in found.nodes if not k.agent and found.current(k).fallback}
        for agent, level, index in list(chosen):
            while (up := NodeKey(agent, level + 1, index // 2)) in found.nodes:
                chosen.add(up)
                level, index = up.level, up.index
        return sorted(chosen, key=_order)
    if label_ is not None:
        key = parse_label(outline.thread, label_)
        if key not in found.nodes:
            raise InputError(f"no line {label_!r} in thread {outline.thread!r}", field="label")
        tops = [key]
    else:
        tops = [NodeKey("", line.level, line.index) for line in outline.lines]
    chosen = set()
    for agent, level, index in tops:
        for d in range(min(depth, level + 1)):
            span = 2**d
            for i in range(index * span, (index + 1) * span):
                if (key := NodeKey(agent, level - d, i)) in found.nodes:
                    chosen.add(key)
    return sorted(chosen, key=_order)


def _order(key: NodeKey) -> tuple[int, int]:
    return (key.level, key.index)


def decide(found: Tree, keys: Sequence[NodeKey], names: Display, limit: int) -> dict[NodeKey, Does]:
    """What each node does, from the texts as they stand before any call."""
    does: dict[NodeKey, Does] = {}
    for key in keys:
        if key.level == 0:
            message = found.message(key)
            fits = message is not None and size(named_line(message, names)) <= limit
            does[key] = "verbatim" if fits else "ask"
        else:
            left, right = (found.current(k).text for k in children(key))
            does[key] = "join" if size(f"{left}\n{right}") <= limit else "ask"
    return does


async def reconsolidate(
    store: Store,
    settings: HistorySettings,
    thread: str,
    label_: str | None = None,
    **options: Unpack[Options],
) -> Resummary:
    """Ask a thread's lines again and write the answers as one change (see the module)."""
    depth, fallbacks = options.get("depth", 1), options.get("fallbacks", False)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError(f"depth must be a whole number >= 1, got {depth!r}", field="depth")
    if fallbacks and (label_ is not None or depth != 1):
        raise InputError("fallbacks re-asks every fallback line: give no label and no depth")
    failures = options.get("max_failures", 3)
    if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
        raise InputError(f"max_failures must be a whole number >= 1, got {failures!r}")
    chosen = options["summarizer"]
    summarizer = checked_summarizer(
        summarizer_for(chosen, settings=settings.model_settings, instructions=settings.instructions)
        if isinstance(chosen, str)
        else chosen
    )
    key = model_key(
        summarizer.name,
        settings.model_settings,
        settings.instructions,
        summarizer_key(summarizer),
    )
    run = _Asking(summarizer=summarizer, settings=settings, timeout=TIMEOUT, max_failures=failures)
    for attempt in range(TRIES):
        if attempt:
            await anyio.sleep(min(0.01 * 2**attempt, 1.0))
        outline = await store.outline(thread)
        if outline is None:
            raise InputError(f"thread {thread!r} has no messages", field="thread")
        found = await tree(store, thread)
        names = display(await store.names(thread), thread)
        keys = targets(found, outline, label_, depth=depth, fallbacks=fallbacks)
        does = decide(found, keys, names, settings.line)
        asked = tuple(label(k.level, k.index) for k in keys if does[k] == "ask")
        if options.get("dry_run", False):
            return Resummary(thread=thread, calls=len(asked), asked=asked)
        made, asks = await _write(found, thread, keys, does, names, run)
        change = changes.Change(
            generations=made,
            current=current(found, made),
            asks=asks,
            model=key,
            now=options.get("now", False),
        )
        if await store.change(outline, change):
            return Resummary(thread=thread, calls=len(asks), asked=asked, rewritten=len(made))
    raise ConflictError(f"thread {thread!r} kept moving while it was re-summarized; try again")


async def _write(
    found: Tree,
    thread: str,
    keys: Sequence[NodeKey],
    does: dict[NodeKey, Does],
    names: Display,
    run: _Asking,
) -> tuple[list[Generation], list[Ask]]:
    """The run's calls, bottom up, then the joins above what changed."""
    texts: dict[NodeKey, str] = {}
    made: list[Generation] = []
    asks: list[Ask] = []
    limit, tries = run.settings.line, run.settings.tries

    def text_of(key: NodeKey) -> str:
        return texts[key] if key in texts else found.current(key).text

    def put(key: NodeKey, text: str, form: Literal["join", "model"], fallback: bool) -> None:
        texts[key] = text
        if text != found.current(key).text:
            made.append(next_generation(found, thread, key, text, form, fallback))

    for key in keys:
        agent, level, index = key
        if does[key] == "verbatim":
            continue
        if level and does[key] == "join":
            left, right = children(key)
            put(key, f"{text_of(left)}\n{text_of(right)}", "join", False)
            continue
        if level:
            joined = f"{text_of(children(key)[0])}\n{text_of(children(key)[1])}"
            task = merge_task(thread, level - 1, 2 * index + 1, joined, limit)
        else:
            message = found.message(key)
            assert message is not None
            before = [
                text_of(k)
                for i in range(max(0, index - 4), index)
                if (k := (agent, 0, i)) in found.nodes
            ]
            task = leaf_task(thread, index, named_line(message, names), before, limit)
        log.warning(
            "thread %r: %s asked again of %r as its next generation",
            thread,
            label(level, index),
            run.summarizer.name,
            extra={"chat_thread": thread},
        )
        done = await write(task, run.ask, limit=limit, tries=tries)
        asks.append(done)
        put(key, done.line, "model", done.outcome == "fallback")
    above = sorted({up for k in texts for up in _ancestors(found, k)} - set(texts), key=_order)
    for key in above:
        if found.current(key).form == "join":
            left, right = children(key)
            if left in texts or right in texts:
                put(key, f"{text_of(left)}\n{text_of(right)}", "join", False)
    return made, asks


def _ancestors(found: Tree, key: NodeKey) -> list[NodeKey]:
    agent, level, index = key
    found_up = []
    while (up := NodeKey(agent, level + 1, index // 2)) in found.nodes:
        found_up.append(up)
        level, index = up.level, up.index
    return found_up
