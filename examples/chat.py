"""A terminal chat with an agent that reads and records its history through the plugin.

    python examples/chat.py                              # offline: north answers "You said: ..."
    CHAT_OUTLINE_TAIL=40,80 python examples/chat.py           # a small tail, to see it cut
    python examples/chat.py --model openai:gpt-4.1-mini  # a real model (its key in the env)

Commands: `/prompt` shows what the agent is sent (`/prompt anthropic:claude-sonnet-4-5` also
sizes the request that provider would receive, offline), `/tree` the summary tree,
`/zoom LABEL` opens a line, `/search WORDS` finds lines and messages, `/quit` (or end of input)
leaves.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from history import History, HistoryError, ThreadHistory, render_view, search, zoom
from history.lines import one_line
from history.settings import settings_from_env

console = Console(highlight=False)


def you_said(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline agent: it answers the last thing said to it with "You said: ..."."""
    said = [
        p.content
        for m in messages
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]
    return ModelResponse(parts=[TextPart(f"You said: {said[-1] if said else ''}")])


async def tree(history: History, thread: str, depth: int) -> Tree:
    """The outline's lines, each with the lines under it down to `depth` levels."""
    outline = await history.outline(thread)
    nodes = {(n.level, n.index): n for n in await history.store.summaries(thread)}
    whole = len(outline.tail) if outline else 0
    root = Tree(
        f"[bold]{escape(thread)}[/]: {len(outline.lines) if outline else 0} lines, "
        f"{whole} messages whole"
    )

    def add(branch: Tree, level: int, index: int, left: int) -> None:
        node = nodes.get((level, index))
        if node is None:
            return
        child = branch.add(f"[cyan]{node.label}[/] {escape(one_line(node.text))}")
        if level > 0 and left > 0:
            for k in (2 * index, 2 * index + 1):
                add(child, level - 1, k, left - 1)

    for level, index, _, _ in outline.lines if outline else []:
        add(root, level, index, depth)
    return root


async def command(history: History, thread: str, agent: str, line: str) -> None:
    name, _, rest = line.partition(" ")
    await history.wait()  # show the thread once what was said is processed
    if name == "/prompt":
        rendered = await render_view(history, thread, agent=agent, model=rest.strip() or None)
        console.print(escape(rendered.text), end="")
        console.print(f"[dim]{rendered.tokens} tokens, {rendered.bytes} bytes[/]")
        if rendered.request is not None:
            console.print(f"[dim]{escape(rendered.request.measured.summary())}[/]")
    elif name == "/tree":
        console.print(await tree(history, thread, int(rest) if rest.strip().isdigit() else 2))
    elif name == "/zoom":
        console.print(escape((await zoom(history, thread, rest.strip())).text))
    elif name == "/search":
        for hit in await search(history, thread, rest):
            console.print(f"[cyan]{hit.label}[/] {escape(hit.text)}")
    else:
        console.print("commands: /prompt [MODEL], /tree [DEPTH], /zoom LABEL, /search WORDS, /quit")


async def chat(args: argparse.Namespace) -> int:
    settings = settings_from_env()
    model: Model | str = args.model or FunctionModel(you_said, model_name="you-said")
    async with History(settings, store=args.store) as history:
        hook = ThreadHistory(history, args.thread, agent=args.agent, user=args.name)
        try:
            agent = Agent(model, capabilities=[hook])
        except Exception as exc:  # an unknown model, or its package or key missing
            console.print(f"[red]cannot use the model {args.model!r}: {escape(str(exc))}[/]")
            return 2
        console.print(f"[dim]thread {args.thread!r} in {args.store}; /help for commands[/]")
        while True:
            try:
                line = (await anyio.to_thread.run_sync(input, f"{args.name}> ")).strip()
            except EOFError:
                break
            if line in ("/quit", "/exit"):
                break
            try:
                if line.startswith("/"):
                    await command(history, args.thread, args.agent, line)
                elif line:
                    result = await agent.run(line)
                    console.print(f"[bold]{escape(args.agent)}[/]: {escape(result.output)}")
            except HistoryError as exc:
                console.print(f"[red]{escape(str(exc))}[/]")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="chat.sqlite", help="the SQLite file (chat.sqlite)")
    parser.add_argument("--thread", default="chat", help="the thread to continue (chat)")
    parser.add_argument("--name", default="Ana", help="your name in the chat (Ana)")
    parser.add_argument("--agent", default="north", help="the agent's name (north)")
    parser.add_argument("--model", help="a pydantic-ai model name; its key comes from the env")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return anyio.run(chat, args)


if __name__ == "__main__":
    raise SystemExit(main())
