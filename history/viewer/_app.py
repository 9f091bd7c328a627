"""The viewer's web app: read-only pages over one store, served by `chat-outline serve`.

Every route reads; none writes (GET and HEAD only, anything else is 405). Chat content is
hostile input: templates escape everything (Jinja2's autoescape), no page holds inline script
or style, and the Content-Security-Policy lets the browser run only the one vendored script.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import ClosedError, HistoryError, NotFoundError, StoreError
from ..plugin import ReadOnly
from . import _pages as pages
from ._html import render

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every answer: the app's own script and stylesheet only."""
HEADERS = {
    "content-security-policy": POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}

Handler = Callable[[Request, ReadOnly], Awaitable[Response]]


def create_app(db: str) -> ASGIApp:
    """The viewer over the store at `db`, opened read only while the app runs."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with ReadOnly.opened(db) as reader:
            app.state.history = reader
            yield

    def route(path: str, handler: Handler, name: str) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request, request.app.state.history)
            except NotFoundError as exc:
                raise HTTPException(404, str(exc)) from exc
            except (StoreError, ClosedError) as exc:  # down, gone or closing: not the asker's
                log.warning("the store failed a page: %s", exc)
                raise HTTPException(503, str(exc)) from exc
            except HistoryError as exc:
                raise HTTPException(400, str(exc)) from exc

        return Route(path, endpoint, methods=["GET"], name=name)

    app = Starlette(
        routes=[
            route("/", pages.threads, "threads"),
            route("/threads/{thread:path}/open/{label}", pages.open_node, "open"),
            route("/threads/{thread:path}/prompt", pages.prompt, "prompt"),
            route("/threads/{thread:path}/time", pages.over_time, "time"),
            route("/threads/{thread:path}", pages.thread, "thread"),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={HTTPException: _error},
        lifespan=lifespan,
    )
    return Guarded(app)


class Guarded:
    """The app behind two rules: reads only (405 otherwise), and the security headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            answer = PlainTextResponse("read only", status_code=405, headers={"allow": "GET"})
            await _secured(answer)(scope, receive, send)
            return

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k.decode() not in HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, secured)


def _secured(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response


async def _error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return PlainTextResponse("read only", status_code=405)
    return render(
        request, "error.html", code=exc.status_code, status=exc.status_code, detail=exc.detail
    )
