"""Benchmarks: chat-outline side by side with the memories users would pick instead.

Run with `python -m benchmarks [--out DIR] [--quick] [--jsonl FILE ...]` after
`pip install -e '.[bench]'` and `PEERS_INSTALL`; it writes `report.md` and PNG plots into `DIR`
(`bench-report/`).

- `corpora`, `synthetic`: the conversations, facts planted early in each.
- `strategies`, `langchain_peers`, `llamaindex_peers`: what each memory sends an agent per turn.
- `fakes`: the one summarizer behaviour they all share.
- `view`: chat-outline's prompt, rendered in one place (to swap for the plugin's own view).
- `cache`, `cost`: prefix, cache reads and writes, and cost per turn; recall at the end.
- `speed`, `latency`: the plugin's throughput, view time, memory, and a slow summarizer.
- `targets`, `report`, `plots`: the verdicts, the Markdown, the pictures.
"""

PEERS_INSTALL = (
    "pip install --no-deps 'pydantic-ai-harness>=0.62,<0.63' 'json-repair>=0.30,<1' "
    "'summarization-pydantic-ai>=0.1.11,<0.2'"
)
"""pydantic-ai's compaction peers, on the project's pydantic-ai: harness 0.62 pins an older one,
so they are installed without their dependencies, not as an extra (`pyproject.toml`)."""
PEER_MODULES = ("pydantic_ai_harness", "summarization_pydantic_ai", "json_repair")


def install_hint(module: str | None) -> str:
    """How to install what a benchmark found missing."""
    return PEERS_INSTALL if module in PEER_MODULES else "pip install -e '.[bench]'"
