"""`python -m history.cli`: the `chat-outline` command."""

from . import main

raise SystemExit(main())
