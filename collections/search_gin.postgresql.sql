-- The GIN index of the search terms writes each row's terms straight into the index rather
-- than into a pending list that every search would read through until a vacuum: with the
-- list, a search right after many messages were stored read thousands of entries.
ALTER INDEX search_words SET (fastupdate = off);
SELECT gin_clean_pending_list('search_words');
