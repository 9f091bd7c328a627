"""A read-only local web viewer of a store: its threads, a thread's tree, outline, tail and
steps, and what an agent is sent (`chat-outline serve`; needs the `serve` extra)."""

from ._app import create_app

__all__ = ("create_app",)
