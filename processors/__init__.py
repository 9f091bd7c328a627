"""The event handlers: `compact` (tail, cut, fold), `summarize`, `weight` and `erase`."""
