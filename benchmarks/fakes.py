"""One fake summarizer behaviour, shared by every strategy so that only the strategies differ.

A summary keeps a fixed share of the tokens it is asked to compress, capped (and, for
chat-outline, within the line's byte limit it is told). Like a model told to copy names, numbers
and ids exactly, it keeps salient words first: words with a digit, or with a capital letter
other than at the start of a sentence. The words it keeps are spread evenly over the input and
stay in their order, one line of output per line of input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from history.contract import Reply, Task
from history.lines import size
from history.summarizer import INSTRUCTIONS

from .cache import count

SENTENCE_END = (".", "!", "?", ":")


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """How every fake summarizer compresses."""

    share: float = 0.2
    """The share of the tokens asked that a summary keeps."""
    cap: int = 1_000
    """The most tokens a summary has, however much it is asked."""


@dataclass(kw_only=True)
class Usage:
    """What a strategy's summarizer was asked, and answered."""

    calls: int = 0
    input_tokens: int = 0
    """Everything sent: instructions, earlier turns of the conversation, the task."""
    output_tokens: int = 0


class Compressor:
    """The shared behaviour, with a count of what it was asked."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.usage = Usage()

    def summarize(self, content: str, *, sent: str, limit: int | None = None) -> str:
        """Compress `content` (what is to be summarized, out of the whole request `sent`)."""
        b = self.behaviour
        target = min(ceil(b.share * count(content)), b.cap)
        summary = compress(content, target, limit)
        self.usage.calls += 1
        self.usage.input_tokens += count(sent)
        self.usage.output_tokens += count(summary)
        return summary


def salient(words: Sequence[str]) -> list[bool]:
    """Which words a careful summarizer keeps first: numbers, ids, names."""
    flags, start = [], True
    for word in words:
        letters = word.strip("\"'()[]{},;.!?:")
        flags.append(
            any(c.isdigit() for c in word)
            or (len(letters) > 1 and any(c.isupper() for c in (letters[1:] if start else letters)))
        )
        start = word.endswith(SENTENCE_END)
    return flags


def spread(items: Sequence[int], k: int) -> list[int]:
    """`k` of `items`, evenly spread."""
    n = len(items)
    if k >= n:
        return list(items)
    return [items[int((i + 0.5) * n / k)] for i in range(k)]


def compress(content: str, target: int, limit: int | None = None) -> str:
    """About `target` tokens of `content`, salient words first; within `limit` bytes if given."""
    lines = [line.split() for line in content.splitlines()]
    words = [(n, w) for n, line in enumerate(lines) for w in line]
    if not words or target <= 0:
        return ""
    keep = max(1, len(words) * target // max(count(content), 1))
    flags = salient([w for _, w in words])
    while True:
        important = [i for i, flag in enumerate(flags) if flag]
        other = [i for i, flag in enumerate(flags) if not flag]
        chosen = set(spread(important, keep))
        chosen.update(spread(other, keep - len(chosen)))
        kept: list[list[str]] = [[] for _ in lines]
        for i in sorted(chosen):
            n, word = words[i]
            kept[n].append(word)
        summary = "\n".join(" ".join(line) for line in kept if line)
        if limit is None or size(summary) <= limit or keep == 1:
            return summary
        keep = max(1, min(keep - 1, keep * limit // size(summary)))


class CompressingSummarizer:
    """chat-outline's summarizer with the shared behaviour: it compresses the task's `<input>`."""

    name = "bench-compressor"

    def __init__(self, compressor: Compressor, *, limit: int) -> None:
        self.compressor = compressor
        self.limit = limit

    async def reply(self, task: Task, prompts: Sequence[str], answers: Sequence[str]) -> Reply:
        sent = "\n".join([INSTRUCTIONS, *prompts, *answers])
        before = self.compressor.usage.input_tokens, self.compressor.usage.output_tokens
        text = self.compressor.summarize(task.input, sent=sent, limit=self.limit)
        after = self.compressor.usage.input_tokens, self.compressor.usage.output_tokens
        return Reply(
            text=text, input_tokens=after[0] - before[0], output_tokens=after[1] - before[1]
        )
