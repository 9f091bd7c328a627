"""The viewer's pages: each reads what it shows (`reading`) and fills in its template."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..agent._earlier import Version, versions
from ..agent.lookup import Zoom
from ..contract import Stored
from ..errors import InputError, NotFoundError
from ..plugin import ReadOnly
from . import _reading as reading
from ._html import render

MODELS = ("anthropic:claude-sonnet-4-5", "openai:gpt-5.6", "openai-chat:gpt-4.1-mini")
"""The providers the prompt page offers (any `provider:name` can be typed in)."""
ROW = 30
"""Pixels a level of the tree takes; the outline's own row is the first."""
GAP = 12
"""Pixels between the outline's row and the tree's."""


@dataclass(frozen=True, kw_only=True)
class Placed:
    """A box where the tree's picture draws it: x and width in percent of the thread's span."""

    box: reading.Box
    x: float
    width: float
    y: int


def href(thread: str, suffix: str = "", **query: str) -> str:
    """The address of a thread's page (or of one of its parts), the thread id quoted whole."""
    shown = {k: v for k, v in query.items() if v}
    return f"/threads/{quote(thread, safe='')}{suffix}" + (f"?{urlencode(shown)}" if shown else "")


def place(boxes: tuple[reading.Box, ...], span: int, *, top: int | None) -> list[Placed]:
    """Boxes placed in the picture: by level under the outline's row, or in it (`top` None)."""
    width = 100 / max(span, 1)
    return [
        Placed(
            box=b,
            x=b.first * width,
            width=b.count * width,
            y=0 if top is None else GAP + (top - b.node.level + 1) * ROW,
        )
        for b in boxes
    ]


def height(top: int) -> int:
    return GAP + (top + 2) * ROW


async def threads(request: Request, history: ReadOnly) -> Response:
    from ..cli._report import figures, matches

    store = history.store
    match = request.query_params.get("match", "")
    shown = [figures(snap) for t in await store.threads() if (snap := await store.snapshot(t))]
    if match:
        shown = [f for f in shown if matches(f, match)]
    return render(request, "threads.html", figures=shown, match=match, href=href)


async def thread(request: Request, history: ReadOnly) -> Response:
    from ..cli._prompt import as_built
    from ..cli._report import resolve

    name = await resolve(history.store, request.path_params["thread"])
    query = request.query_params.get("q", "")
    label = request.query_params.get("open", "")
    agent = request.query_params.get("agent", "")
    opened = [] if agent else reading.keys_of([label])
    # A search's hits are cut to the thread's own line, as `search` cuts them.
    page = await reading.read_page(await as_built(history, name), name, opened=opened, query=query)
    zoomed = await reading.opened(history, name, label, agent=agent) if label else None
    steps = await _steps(history, zoomed)
    drawn = page.drawn
    return render(
        request,
        "thread.html",
        page=page,
        query=query,
        zoomed=zoomed,
        agent=agent,
        href=href,
        outline=place(drawn.outline, drawn.span, top=None),
        boxes=place(drawn.boxes, drawn.span, top=drawn.top),
        height=height(drawn.top),
        children=[],
        thread=name,
        steps=steps,
        generations=await _generations(history, name, label, agent) if label else (),
    )


async def open_node(request: Request, history: ReadOnly) -> Response:
    """A line opened as `zoom` opens it: a fragment the page's script inserts, with its
    children's boxes placed in the tree's picture."""
    name = request.path_params["thread"]
    agent = request.query_params.get("agent", "")
    outline = await history.store.outline(name)
    if outline is None:
        raise NotFoundError(f"no thread {name!r} in {history.store.url!r}")
    zoomed = await reading.opened(history, name, request.path_params["label"], agent=agent)
    shown = {(level, index) for level, index, _, _ in outline.lines}
    boxes = tuple(reading.Box(node=n, outline=(n.level, n.index) in shown) for n in zoomed.lines)
    top = max(outline.boundary.bit_length() - 1, 0)
    earlier = await _generations(history, name, request.path_params["label"], agent)
    return render(
        request,
        "open.html",
        thread=name,
        zoomed=zoomed,
        agent=agent,
        href=href,
        steps=await _steps(history, zoomed),
        generations=earlier,
        children=[] if agent else place(boxes, outline.boundary, top=top),
    )


async def _generations(
    history: ReadOnly, thread: str, label: str, agent: str
) -> tuple[Version, ...]:
    """The generations of the line opened, when it has more than its first; a message still
    whole has no line."""
    try:
        found = await versions(history, thread, label, agent=agent or None)
    except (NotFoundError, InputError):
        return ()
    return found if len(found) > 1 else ()


async def _steps(history: ReadOnly, zoomed: Zoom | None) -> tuple[Stored, ...]:
    """The tool steps after the message opened, if a message is open."""
    if zoomed is None or zoomed.message is None:
        return ()
    return await reading.steps_after(history.store, zoomed.message)


async def prompt(request: Request, history: ReadOnly) -> Response:
    """What an agent is sent: the view as `prompt --model` renders it for a provider."""
    from ..agent.providers import pieces
    from ..agent.rendering import render_view
    from ..cli._prompt import as_built, only_agent
    from ..cli._report import resolve

    name = await resolve(history.store, request.path_params["thread"])
    history = await as_built(history, name)
    model = request.query_params.get("model", MODELS[0]).strip()
    given = request.query_params.get("agent")
    agent = (given or None) if given is not None else await only_agent(history, name)
    result = await render_view(history, name, agent=agent, model=model or None)
    encoding = history.settings.encoding
    parts, total = [], 0
    if result.request is not None:
        for piece in pieces(model, result.request.body, encoding=encoding):
            total += piece.tokens
            parts.append((piece, total <= result.request.measured.cached))
    return render(
        request,
        "prompt.html",
        thread=name,
        model=model,
        models=MODELS,
        agent=agent or "",
        result=result,
        parts=parts,
        href=href,
    )


async def over_time(request: Request, history: ReadOnly) -> Response:
    """The thread's tail and outline at each message, with its cuts and folds."""
    from ..cli._report import resolve
    from ._timeline import HEIGHT, WIDTH, chart, timeline

    name = await resolve(history.store, request.path_params["thread"])
    line = await timeline(history.store, name)
    return render(
        request,
        "time.html",
        thread=name,
        line=line,
        chart=chart(line),
        width=WIDTH,
        height=HEIGHT,
        href=href,
    )
