"""The event handlers, pure: `compact` (tail, cut, fold), `summarize` (lines, merges) and
`weight`. They take data and hand back changes, importing only the contract, the seam they share
with the core (`history.processing`), lines and settings; the core commits what they did."""
