"""The viewer's templates: Jinja2 with every value escaped, since chat content is hostile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=True,  # every template: chat content never reaches the page unescaped
    undefined=jinja2.StrictUndefined,
)


def render(request: Request, name: str, *, code: int = 200, **context: Any) -> HTMLResponse:
    """A template filled in, as an HTML answer; every page names the store it reads."""
    store = request.app.state.history.store.url
    template = TEMPLATES.get_template(name)
    return HTMLResponse(template.render(store=store, **context), status_code=code)
