"""One message's processing as a whole: its lines first, then one version-checked commit.

The processors move a copy of the outline and ask for lines through a callback; this module
gives them the callback (the summarizer's asking loop), and commits what they did. The plugin
and a rebuild both process through `process_one`.
"""

from __future__ import annotations

from .contract import Ask, Outline, Stored, Task
from .processing import MessageReader, Vanished
from .processors.compact import compact
from .processors.summarize import Nodes
from .settings import HistorySettings
from .store import Store
from .summarizer import AskFn, write


async def process_one(
    store: Store,
    state: Outline,
    stored: Stored,
    *,
    nodes: Nodes,
    read: MessageReader,
    ask: AskFn,
    settings: HistorySettings,
    model_key: str,
    defer: bool = False,
) -> tuple[Outline, list[Ask]] | None:
    """SPEC 5.2: one message's lines first (the model calls, no transaction open), then one
    commit checked against the outline's version. None when the outline changed under it
    (another writer, or an erase): nothing was written, and the caller reloads and redoes it.

    With `defer`, a message that only joined the tail is not committed: the outline it leaves
    (its version unchanged) is committed whole with a later message's, so a run of such
    messages costs one write, and each message's processing is still all or nothing.
    """
    work = state.copy()
    asks: list[Ask] = []

    async def write_line(task: Task) -> str:
        done = await write(task, ask, limit=settings.line, tries=settings.tries)
        asks.append(done)
        return done.line

    try:
        change = await compact(work, stored, nodes, write_line, read, settings)
    except Vanished:
        return None
    lines_changed = change.cut or change.folded
    if defer and not (lines_changed or nodes.written or asks):
        return work, asks
    if not await store.commit(
        state, work, nodes.written, asks, model_key, lines_changed=lines_changed
    ):
        return None
    work.version = state.version + 1
    nodes.settle()
    return work, asks
