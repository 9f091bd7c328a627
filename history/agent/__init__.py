"""What an agent reads: its view of a thread, zoom and search, its steps, the pydantic-ai hook.

- `prompt`: `view`, the thread as pydantic-ai messages (the outline, then the tail whole), and
  `prompt_text`, the same as plain text.
- `lookup`: `zoom` into a line or a message, `search` the thread by its words.
- `steps`: an agent's tool calls and returns as a step's JSON, and back.
- `capability`: `ThreadHistory`, the pydantic-ai capability that sends the view and records the
  run, with the `zoom` and `search_history` tools.
- `providers`: what OpenAI and Anthropic would receive, recorded offline.

Nothing is imported here: reading files needs `steps` alone, and the rest pulls in the plugin.
The names users need are exported by `history` itself.
"""
