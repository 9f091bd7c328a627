"""`chat-outline serve`: a read-only local web viewer of a store's threads (`history.viewer`).

It binds to 127.0.0.1 unless told otherwise, and says so when told: the pages show whole
conversations to whoever can reach the port.
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from ..errors import ConfigurationError
from ._options import Commands, command, db_option, positive
from ._output import print_json, say
from ._stores import must_exist, opened

HOST = "127.0.0.1"
PORT = 8765
INSTALL = "pip install 'chat-outline[serve]'"


def register(commands: Commands) -> None:
    serve = command(commands, "serve", _serve, help="a read-only web viewer of the store's threads")
    db_option(serve)
    serve.add_argument(
        "--host", default=HOST, help=f"the address to listen on ({HOST}: this machine only)"
    )
    serve.add_argument("--port", type=positive, default=PORT, help=f"the port ({PORT})")
    serve.add_argument(
        "--json",
        action="store_true",
        help="print the store and the viewer's address as one JSON document before serving",
    )


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..viewer import create_app
    except ImportError as exc:
        raise ConfigurationError(f"serve needs the viewer's packages: {INSTALL} ({exc})") from exc
    must_exist(args.db)
    where = anyio.run(_check, args.db)  # a missing or foreign store is refused before listening
    if args.host != HOST:
        say(
            f"warning: listening on {args.host!r}: anyone who can reach port {args.port} "
            "reads every thread of the store"
        )
    url = f"http://{args.host}:{args.port}/"
    if args.json:
        print_json({"store": where, "url": url})
        sys.stdout.flush()
    say(f"serving {where} at {url} (Ctrl-C stops)")
    config = uvicorn.Config(
        create_app(args.db),
        host=args.host,
        port=args.port,
        log_level=logging.WARNING,
        access_log=False,
        server_header=False,
    )
    uvicorn.Server(config).run()
    return 0


async def _check(db: str) -> str:
    """The store's URL as it names itself (a PostgreSQL URL without its password)."""
    async with opened(db, read_only=True) as store:
        return store.url
