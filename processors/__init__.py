"""The event handlers: `compact` (tail, cut, fold), `summarize` (lines, merges), `weight`, `erase`."""
