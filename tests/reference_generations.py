"""An independent reference of names and generations (`docs/generations.md`), for differential
tests.

Written from that section and the SPEC alone: plain, synchronous, in memory, as literal to the
text as it can be. It starts from a SPEC trace (`tests/reference.py`'s `simulate`), whose
summaries are every node's generation 0, and applies renames (sections 2 and 3) and the
choice of a re-summary's nodes (section 4.1) to it.

Points where the text can be read more than one way, and the reading taken here:

 1. A node's message (for a `line` form) is the trace's `message` of its level-0 summary.
 2. A rename's `old` is the author's display name in the thread before the rename (section 3);
    a store-wide rename of an author who has a thread name in T changes nothing in T.
 3. The longest-id rule of section 3.4 compares ids by length in code points.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

spec: Any = importlib.import_module("tests.reference")  # untyped, as its author wrote it

Node = tuple[str, int, int]
"""(agent, level, index): agent '' for the shared tree."""


class Refused(Exception):
    """A rename the section refuses (an `InputError` in the project)."""


@dataclass
class Generation:
    text: str
    form: str  # "line" | "join" | "model"
    fallback: bool = False
    change: int = 0


@dataclass
class Names:
    store: dict[str, str] = field(default_factory=dict)
    threads: dict[str, dict[str, str]] = field(default_factory=dict)

    def display(self, thread: str, author: str) -> str:
        """Section 2: T's name, else the store-wide name, else the id."""
        own = self.threads.get(thread, {})
        if author in own:
            return own[author]
        return self.store.get(author, author)

    def store_display(self, author: str) -> str:
        return self.store.get(author, author)


def line_under(m: Any, names: Names) -> str:
    """`line_of(m)` with author and `to` as their display names in m's thread."""
    shown = spec.Message(
        id=m.id,
        thread=m.thread,
        author=names.display(m.thread, m.author),
        to=names.display(m.thread, m.to) if m.to else "",
        text=m.text,
        at=m.at,
        step=m.step,
        files=m.files,
    )
    return str(spec.line_of(shown))


def _swap(text: str, *, old: str, new: str) -> str:
    return whole_word(text, old, new)


def whole_word(text: str, old: str, new: str) -> str:
    """Section 3.2, as the text spells it."""
    if not old:
        return text
    return re.sub(r"(?<!\w)" + re.escape(old) + r"(?!\w)", lambda _: new, text)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def replace_ids(text: str, names: dict[str, str]) -> str:
    """Section 3.4: at each position, left to right, the longest id that stands there as a
    whole word is replaced by its display name, and the scan goes on after it."""
    ids = sorted((x for x in names if x), key=len, reverse=True)
    out: list[str] = []
    p = 0
    while p < len(text):
        for x in ids:
            end = p + len(x)
            if (
                text.startswith(x, p)
                and (p == 0 or not _word(text[p - 1]))
                and (end == len(text) or not _word(text[end]))
            ):
                out.append(names[x])
                p = end
                break
        else:
            out.append(text[p])
            p += 1
    return "".join(out)


@dataclass
class Thread:
    """One thread's nodes, each with its generations, and its messages by id."""

    messages: dict[str, Any]
    nodes: dict[Node, list[Generation]]
    message_of: dict[Node, str]
    changes: int = 0

    def current(self, node: Node) -> Generation:
        return self.nodes[node][-1]

    def known(self, author: str) -> bool:
        return any(author in (m.author, m.to) for m in self.messages.values())


def initial_form(level: int, text: str, message: Any) -> str:
    """Section 1: generation 0's form read from its text."""
    if level == 0:
        assert message is not None
        return "line" if text == spec.line_of(message) else "model"
    return "join" if "\n" in text else "model"


def threads_of(trace: dict[str, Any], inputs: list[dict[str, Any]]) -> dict[str, Thread]:
    """Every thread of a SPEC trace, its nodes at generation 0."""
    messages: dict[str, dict[str, Any]] = {}
    for obj in inputs:
        if "event" in obj:
            messages.pop(obj["thread"], None)
            continue
        m = spec.check_message(obj)
        messages.setdefault(m.thread, {})[m.id] = m
    threads: dict[str, Thread] = {}
    for rows in (trace["summaries"], trace["steps"]):
        for r in rows:
            t = threads.setdefault(r["thread"], Thread(messages[r["thread"]], {}, {}))
            node = (r.get("agent", ""), r["level"], r["index"])
            m = t.messages[r["message"]] if r["message"] is not None else None
            if m is not None:
                t.message_of[node] = m.id
            t.nodes[node] = [Generation(r["text"], initial_form(r["level"], r["text"], m))]
    return threads


def _texts_after(t: Thread, names: Names, model_text: Callable[[str], str]) -> dict[Node, str]:
    """Section 3.1: every node's new text, visited by (agent, level, index)."""
    new: dict[Node, str] = {}
    for node in sorted(t.nodes):
        agent, level, index = node
        g = t.current(node)
        if g.form == "line":
            new[node] = line_under(t.messages[t.message_of[node]], names)
        elif g.form == "join":
            left, right = (agent, level - 1, 2 * index), (agent, level - 1, 2 * index + 1)
            new[node] = new[left] + "\n" + new[right]
        else:
            new[node] = model_text(g.text)
    return new


def _commit(t: Thread, new: dict[Node, str]) -> None:
    changed = [n for n in sorted(t.nodes) if new[n] != t.current(n).text]
    if not changed:
        return
    t.changes += 1
    for n in changed:
        g = t.current(n)
        t.nodes[n].append(Generation(new[n], g.form, g.fallback, t.changes))


def _authors(t: Thread) -> set[str]:
    return {b for m in t.messages.values() for b in (m.author, m.to) if b}


def rename(
    threads: dict[str, Thread], names: Names, author: str, name: str, thread: str | None = None
) -> None:
    """Section 2's `rename` and section 3's rewrite, one change per affected thread."""
    if not name.strip() or any(c in name for c in "\r\n\x00"):
        raise Refused("name")
    scope = [threads[thread]] if thread is not None else list(threads.values())
    if thread is not None and thread not in threads:
        raise Refused("author")
    if not any(t.known(author) for t in scope):
        raise Refused("author")
    if thread is None:
        others = {b for t in threads.values() for b in _authors(t)}
        if any(b != author and names.store_display(b) == name for b in others):
            raise Refused("name taken")
        if names.store_display(author) == name:
            return
    else:
        t = threads[thread]
        others = _authors(t)
        if any(b != author and names.display(thread, b) == name for b in others):
            raise Refused("name taken")
        if names.display(thread, author) == name:
            return
    olds = {key: names.display(key, author) for key, t in threads.items()}
    if thread is None:
        names.store[author] = name
    else:
        names.threads.setdefault(thread, {})[author] = name
    for key, t in threads.items():
        if (thread is not None and key != thread) or not t.known(author):
            continue
        old, now = olds[key], names.display(key, author)
        if old == now:
            continue
        _commit(t, _texts_after(t, names, functools.partial(_swap, old=old, new=now)))


def name_generations(t: Thread, names: Names, thread: str, new_nodes: list[Node]) -> None:
    """Section 3.4: the name generations a processing commit writes for its new nodes."""
    authors = _authors(t)
    shown = {x: names.display(thread, x) for x in authors if names.display(thread, x) != x}
    if not shown:
        return
    new: dict[Node, str] = {}
    for node in sorted(new_nodes):
        agent, level, index = node
        g = t.nodes[node][0]
        if g.form == "line":
            new[node] = line_under(t.messages[t.message_of[node]], names)
        elif g.form == "join":
            pair = [(agent, level - 1, 2 * index + k) for k in (0, 1)]
            new[node] = "\n".join(new.get(c, t.current(c).text) for c in pair)
        else:
            new[node] = replace_ids(g.text, shown)
    changed = [n for n in sorted(new_nodes) if new[n] != t.current(n).text]
    if changed:
        t.changes += 1
        for n in changed:
            g = t.current(n)
            t.nodes[n].append(Generation(new[n], g.form, g.fallback, t.changes))


def label(node: Node) -> str:
    _, level, index = node
    return f"{index * 2**level}+{2**level}"


def plan(
    t: Thread,
    names: Names,
    outline: list[tuple[int, int]],
    *,
    line: int,
    target: str | None = None,
    depth: int = 1,
    fallbacks: bool = False,
) -> list[tuple[Node, str]]:
    """Section 4.1: the range, bottom up, each node with what it does ("verbatim", "join" or
    "asked"). The number of "asked" is what a dry run reports."""
    shared = {n for n in t.nodes if n[0] == ""}
    if fallbacks:
        targets = [n for n in shared if t.current(n).fallback]
        chosen = set(targets)
        for _, level, index in targets:
            while True:
                level, index = level + 1, index // 2
                if ("", level, index) not in shared:
                    break
                chosen.add(("", level, index))
    else:
        if target is not None:
            found = [n for n in shared if label(n) == target]
            if not found:
                raise Refused("label")
            targets = found
        else:
            targets = [("", level, index) for level, index in outline]
        chosen = set()
        for _, level, index in targets:
            for down in range(depth):
                lv = level - down
                if lv < 0:
                    break
                span = 2**down
                for k in range(index * span, index * span + span):
                    if ("", lv, k) in shared:
                        chosen.add(("", lv, k))
    out = []
    for node in sorted(chosen, key=lambda n: (n[1], n[2])):
        _, level, index = node
        if level == 0:
            text = line_under(t.messages[t.message_of[node]], names)
            out.append((node, "verbatim" if spec.size(text) <= line else "asked"))
        else:
            left = t.current(("", level - 1, 2 * index)).text
            right = t.current(("", level - 1, 2 * index + 1)).text
            joined = left + "\n" + right
            out.append((node, "join" if spec.size(joined) <= line else "asked"))
    return out
