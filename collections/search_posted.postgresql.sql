-- Postings written in batches (PostgreSQL; `search_posted.sql` is SQLite's). A row of `search`
-- is written unposted, and a commit that leaves 64 or more of its thread's rows so writes their
-- postings in one statement, in the postings' order (`post_search`): a message's sixty-odd terms
-- went one by one to as many pages of `search_term`, each a B-tree insert with its WAL record.
-- Until then a search reads the thread's unposted rows' words (`search_unposted`, a few dozen at
-- most), so it finds every row at once. The rows stored before were posted by the triggers.
ALTER TABLE search ADD COLUMN posted BOOLEAN NOT NULL DEFAULT TRUE;
CREATE INDEX search_unposted ON search (thread, agent) WHERE NOT posted;
DROP TRIGGER search_added ON search;
DROP FUNCTION search_added();
DROP TRIGGER search_removed ON search;
CREATE TRIGGER search_removed AFTER DELETE ON search FOR EACH ROW WHEN (OLD.posted)
    EXECUTE FUNCTION search_removed();
