"""Search: what the store indexes of a thread, and how it finds and ranks what a query asks.

- `rows`: the search index's rows, what a message or a line is indexed as (its terms, stemmed
  by `history.terms`);
- `indexing`: writing them in a transaction, their words waiting for their postings, and the
  posting policy that writes those in batches (`due`);
- `reads`: search's reads in SQL, one statement each (`ranking.Reads`);
- `ranking`: finding and ranking over those reads, the same arithmetic for every store.

The statements are `collections/queries.sql`'s (`search_*`), the tables
`collections/search*.sql`'s.
"""
