"""Benchmarks: chat-outline side by side with the memories users would pick instead.

Run with `python -m benchmarks [--out DIR] [--quick] [--jsonl FILE ...]` after
`pip install -e '.[bench]'`; it writes `report.md` and PNG plots into `DIR` (`bench-report/`).

- `corpora`, `synthetic`: the conversations, facts planted early in each.
- `strategies`, `langchain_peers`, `llamaindex_peers`: what each memory sends an agent per turn.
- `fakes`: the one summarizer behaviour they all share.
- `view`: chat-outline's prompt, rendered in one place (to swap for the plugin's own view).
- `cache`, `cost`: prefix, cache reads and writes, and cost per turn; recall at the end.
- `speed`, `latency`: the plugin's throughput, view time, memory, and a slow summarizer.
- `targets`, `report`, `plots`: the verdicts, the Markdown, the pictures.
"""
