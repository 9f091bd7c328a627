-- A search row no longer says whether its postings are written: a row waits for them exactly
-- while its words wait in `search_pending`. Setting the flag rewrote every row of a batch once
-- more (on PostgreSQL a whole new version of each row, and its index entries, left dead until a
-- vacuum), to say what the pending rows already said.
DROP INDEX search_unposted;
ALTER TABLE search DROP COLUMN posted;
