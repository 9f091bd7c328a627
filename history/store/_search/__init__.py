"""Search: what the store indexes of a thread, and how it finds and ranks what a query asks.

- `terms`: the words search indexes and looks for, folded and stemmed, with dates in words;
- `rows`: the search index's rows, what a message or a line is indexed as;
- `indexing`: writing them in a transaction, their words waiting for their postings, and the
  posting policy that writes those in batches (`due`);
- `reads`: search's reads in SQL, one statement each (`ranking.Reads`);
- `ranking`: finding and ranking over those reads, the same arithmetic for every store.

Which languages search stems in (`history._languages`: the list, the default and the check) stays
on the data floor, below the store: the settings check `search_language` when they are made,
and importing the settings never loads the store. The statements are `collections/queries.sql`'s
(`search_*`), the tables those of `collections/search*.sql`.
"""
