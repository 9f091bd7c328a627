"""Generations: a node's texts numbered 0, 1, 2, ...; what a rename rewrites; which text an
agent's outline shows (docs/generations.md).

Generation 0 is the `Summary` the processor wrote, and the only one it reads; later ones are
`Generation`s, made by renames and re-summaries. The newest is a node's current text, what
zoom, search, show and the viewer read; an agent's outline shows the newest whose change it
has taken (`shown`), so it moves only at a cut or a fold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ._generated import Form, Generation
from ._names import Display, display, named_line, whole_word, whole_words
from .contract import Hit, Message, NodeKey, Snapshot, Stored, Summary
from .lines import line_of, size
from .store import Store
from .store import _changes as changes
from .store._records import ThreadRecords


@dataclass(frozen=True, kw_only=True)
class Text:
    """One generation of a node, as a rename or a re-summary reads it."""

    generation: int
    text: str
    form: Form
    fallback: bool


def first_form(node: Summary, message: Message | None) -> Form:
    """How generation 0 was made, read from its text (section 1): a leaf is its message's line
    rendered whole, or a model's; a parent holding a newline is a join (an answer never holds
    one), else a model's."""
    if node.level == 0:
        return "line" if message is not None and node.text == line_of(message) else "model"
    return "join" if "\n" in node.text else "model"


def key_of(node: Summary | Generation) -> NodeKey:
    return NodeKey(node.agent, node.level, node.index)


def children(key: NodeKey) -> tuple[NodeKey, NodeKey]:
    agent, level, index = key
    return NodeKey(agent, level - 1, 2 * index), NodeKey(agent, level - 1, 2 * index + 1)


class Tree:
    """A thread's nodes with every generation, and the messages of its leaves."""

    def __init__(
        self,
        nodes: Iterable[Summary],
        generations: Iterable[Generation],
        messages: Mapping[str, Message],
    ) -> None:
        self.nodes: dict[NodeKey, Summary] = {key_of(n): n for n in nodes}
        self.later: dict[NodeKey, list[Generation]] = {}
        for g in sorted(generations, key=lambda g: g.generation):
            self.later.setdefault(g.key, []).append(g)
        self.messages = messages

    def message(self, key: NodeKey) -> Message | None:
        found = self.nodes[key].message
        return None if found is None else self.messages.get(found)

    def text(self, key: NodeKey, generation: int | None = None) -> Text | None:
        """The node's generation `generation` (None: its current one); None if it has none."""
        node, later = self.nodes[key], self.later.get(key, [])
        if later and (generation is None or generation > 0):
            found = later[-1] if generation is None else _numbered(later, generation)
            if found is None:
                return None
            return Text(
                generation=found.generation,
                text=found.text,
                form=found.form,
                fallback=found.fallback,
            )
        if generation not in (None, 0):
            return None
        form = first_form(node, self.message(key))
        return Text(generation=0, text=node.text, form=form, fallback=node.fallback)

    def current(self, key: NodeKey) -> Text:
        found = self.text(key)
        assert found is not None
        return found

    def numbers(self, key: NodeKey) -> list[int]:
        return [0, *(g.generation for g in self.later.get(key, []))]


def _numbered(later: list[Generation], generation: int) -> Generation | None:
    return next((g for g in later if g.generation == generation), None)


def renamed(tree: Tree, thread: str, names: Display, old: str, new: str) -> list[Generation]:
    """A rename's generations (section 3.1): every node visited by agent, level and index; a
    line rendered again under `names` (those after the rename), a join joined again from its
    children's new texts, a model's line with `old` replaced by `new` as a whole word."""
    return _rewritten(tree, thread, sorted(tree.nodes), names, lambda t: whole_word(t, old, new))


def _rewritten(
    tree: Tree,
    thread: str,
    keys: Sequence[NodeKey],
    names: Display,
    model: Callable[[str], str],
    *,
    first: bool = False,
) -> list[Generation]:
    """The generations that bring `keys` (lowest levels first) under `names`; `first`: from
    their generation 0 (new nodes), else from their current texts."""
    made: list[Generation] = []
    texts: dict[NodeKey, str] = {}
    for key in keys:
        now = tree.text(key, 0) if first else tree.current(key)
        assert now is not None
        if now.form == "line" and (message := tree.message(key)) is not None:
            text = named_line(message, names)
        elif now.form == "join" and all(k in tree.nodes for k in children(key)):
            left, right = children(key)
            left_text = texts[left] if left in texts else tree.current(left).text
            right_text = texts[right] if right in texts else tree.current(right).text
            text = f"{left_text}\n{right_text}"
        else:
            text = model(now.text)
        texts[key] = text
        if text != now.text:
            made.append(next_generation(tree, thread, key, text, now.form, now.fallback))
    return made


def next_generation(
    tree: Tree, thread: str, key: NodeKey, text: str, form: Form, fallback: bool
) -> Generation:
    """The node's next generation, with `text`."""
    agent, level, index = key
    return Generation(
        thread=thread,
        agent=agent,
        level=level,
        index=index,
        generation=tree.numbers(key)[-1] + 1,
        text=text,
        bytes=size(text),
        form=form,
        fallback=fallback,
    )


def named_first(
    tree: Tree, thread: str, written: Sequence[Summary], names: Display
) -> list[Generation]:
    """The name generations of nodes the processor just wrote (section 3.4), with every named
    author's id replaced at once in a model's line."""
    keys = sorted(key_of(n) for n in written)
    return _rewritten(tree, thread, keys, names, lambda t: whole_words(t, names), first=True)


def current(tree: Tree, generations: Sequence[Generation]) -> list[Summary]:
    """The nodes `generations` change, as they read with them: to index for search."""
    newest = {g.key: g for g in sorted(generations, key=lambda g: g.generation)}
    return [_with(tree.nodes[key], g) for key, g in newest.items()]


def overlay(
    nodes: Sequence[Summary], generations: Sequence[Generation], *, upto: int | None = None
) -> list[Summary]:
    """`nodes` as they read with their newest generation, or the newest made by change `upto`
    at the latest (what the outline an agent is sent shows)."""
    if not generations:
        return list(nodes)
    newest: dict[NodeKey, Generation] = {}
    for g in sorted(generations, key=lambda g: g.generation):
        if upto is None or g.made <= upto:
            newest[g.key] = g
    return [_with(n, newest.get(key_of(n))) for n in nodes]


def _with(node: Summary, generation: Generation | None) -> Summary:
    """The node as it reads with `generation` (None: its first)."""
    if generation is None:
        return node
    g = generation
    return replace(node, text=g.text, bytes=g.bytes, fallback=g.fallback)


def shown_snapshot(snapshot: Snapshot) -> Snapshot:
    """The snapshot's nodes and steps as the outline an agent is sent shows them (section 5):
    each with its newest generation made by the change the outline has taken."""
    if not snapshot.generations:
        return snapshot
    later, upto = snapshot.generations, snapshot.shown
    return replace(
        snapshot,
        nodes=tuple(overlay(snapshot.nodes, later, upto=upto)),
        steps=tuple(overlay(snapshot.steps, later, upto=upto)),
    )


def current_snapshot(snapshot: Snapshot) -> Snapshot:
    """A snapshot of a whole tree (`Store.snapshot(tree=True)`) with its nodes' current texts."""
    if not snapshot.generations:
        return snapshot
    later = snapshot.generations
    return replace(
        snapshot,
        nodes=tuple(overlay(snapshot.nodes, later)),
        steps=tuple(overlay(snapshot.steps, later)),
    )


def current_numbers(snapshot: Snapshot) -> dict[NodeKey, int]:
    """The number of each node's current generation in a snapshot of a whole tree (those with
    generation 0 left out)."""
    return {g.key: g.generation for g in sorted(snapshot.generations, key=lambda g: g.generation)}


MANY = 1_000
"""Nodes past which their generations are read as the whole thread's, in one range."""


async def _later(
    store: Store, thread: str, nodes: Sequence[Summary | Hit | NodeKey]
) -> list[Generation]:
    """The newest generation of each of `nodes`; every generation of the thread when they are
    many."""
    if len(nodes) > MANY:
        return await store.generations(thread)
    keys: dict[str, list[tuple[int, int]]] = {}
    for n in nodes:
        agent, level, index = n if isinstance(n, tuple) else (n.agent, n.level, n.index)
        keys.setdefault(agent, []).append((level, index))
    found: list[Generation] = []
    for agent, some in keys.items():
        found += await store.generations(thread, some, agent=agent)
    return found


async def current_nodes(store: Store, thread: str, nodes: Sequence[Summary]) -> list[Summary]:
    """The nodes with their current texts."""
    return (await numbered(store, thread, nodes))[0]


async def current_hits(store: Store, thread: str, hits: Sequence[Hit]) -> list[Hit]:
    """Search hits on lines with the lines' current texts (the index keeps their first)."""
    made, _ = await store.shown(thread)
    if not made:
        return list(hits)
    newest: dict[NodeKey, Generation] = {}
    for g in await _later(store, thread, [h for h in hits if h.message is None]):
        newest[g.key] = g
    return [_hit(h, newest.get(NodeKey(h.agent, h.level, h.index))) for h in hits]


def _hit(hit: Hit, generation: Generation | None) -> Hit:
    """A hit on a line, reading its current text; a message's as it is."""
    if hit.message is not None or generation is None:
        return hit
    return replace(hit, text=generation.text)


async def numbered(
    store: Store, thread: str, nodes: Sequence[Summary]
) -> tuple[list[Summary], dict[NodeKey, int]]:
    """The nodes with their current texts, and the number of each one's current generation
    (those with generation 0 left out)."""
    made, _ = await store.shown(thread)
    if not made:
        return list(nodes), {}
    generations = await _later(store, thread, nodes)
    return overlay(nodes, generations), {g.key: g.generation for g in generations}


async def tree(store: Store, thread: str) -> Tree:
    """The thread's tree with every generation and the messages of its leaves."""
    nodes = await store.summaries(thread)
    outline = await store.outline(thread)
    last = -1 if outline is None else outline.position
    messages = {s.message.id: s.message for s in await store.messages(thread, 0, last)}
    return Tree(nodes, await store.generations(thread), messages)


async def named_change(
    store: Store,
    thread: str,
    written: Sequence[Summary],
    names: Display,
    read: Callable[[str], Awaitable[Stored | None]],
) -> changes.Change | None:
    """The name generations of the nodes a processing commit writes (section 3.4), as a
    change to commit with them; None when they need none."""
    found = {key_of(n): n for n in written}
    wanted: dict[str, list[tuple[int, int]]] = {}
    for n in written:
        if n.level and "\n" in n.text:  # a join: its children's current texts
            for agent, level, index in children(key_of(n)):
                if (agent, level, index) not in found:
                    wanted.setdefault(agent, []).append((level, index))
    for agent, keys in wanted.items():
        found |= {key_of(n): n for n in await store.nodes(thread, keys, agent=agent)}
    made, _ = await store.shown(thread)
    older = [k for k in found if k not in {key_of(n) for n in written}]
    later = await _later(store, thread, older) if made and older else []
    messages: dict[str, Message] = {}
    for n in written:
        if n.message is not None and (stored := await read(n.message)) is not None:
            messages[n.message] = stored.message
    tree = Tree(found.values(), [g for g in later if g.key in found], messages)
    generations = named_first(tree, thread, written, names)
    if not generations:
        return None
    return changes.Change(generations=generations)


async def carried(
    store: Store, original: ThreadRecords, rebuilt: ThreadRecords
) -> tuple[tuple[Generation, ...], tuple[int, int]]:
    """The generations a rebuilt thread keeps (section 7), and its `(made, shown)`: every
    generation of a node whose first text came out the same; a node that is new or changed
    gets the name generation of section 3.4, as one change the rebuilt outline shows."""
    before = {key_of(n): n.text for n in original.summaries}
    same = {key_of(n) for n in rebuilt.summaries if before.get(key_of(n)) == n.text}
    kept = tuple(g for g in original.generations if g.key in same)
    changed = [n for n in rebuilt.summaries if key_of(n) not in same]
    names = display(await store.names(rebuilt.thread), rebuilt.thread)
    if not (changed and names):
        return kept, original.shown
    messages = {s.message.id: s.message for s in rebuilt.messages}
    found = Tree(rebuilt.summaries, kept, messages)
    made = original.shown[0] + 1
    named = [replace(g, made=made) for g in named_first(found, rebuilt.thread, changed, names)]
    return (*kept, *named), ((made, made) if named else original.shown)
