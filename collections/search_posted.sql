-- Postings written in batches (SQLite; `search_posted.postgresql.sql` is PostgreSQL's). A row of
-- `search` is written unposted, and a commit that leaves 64 or more of its thread's rows so
-- writes their postings in one statement, in the postings' order (`post_search`): a message's
-- sixty-odd terms went one by one to as many pages of `search_term`, in a commit of their own.
-- Until then a search reads the thread's unposted rows' words (`search_unposted`, a few dozen at
-- most), so it finds every row at once. The rows stored before were posted by the triggers.
ALTER TABLE search ADD COLUMN posted BOOLEAN NOT NULL DEFAULT 1;
CREATE INDEX search_unposted ON search (thread, agent) WHERE NOT posted;
DROP TRIGGER search_added;
DROP TRIGGER search_removed;
CREATE TRIGGER search_removed AFTER DELETE ON search WHEN OLD.posted
BEGIN
    DELETE FROM search_term
    WHERE term IN (SELECT value FROM json_each('["' || replace(trim(OLD.words), '  ', '","') || '"]'))
        AND line = OLD.line AND level = OLD.level AND idx = OLD.idx;
END;
