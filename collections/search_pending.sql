-- A search row's words wait for its postings in a table of their own (`search_pending`), not in
-- the row: a row written with its words and emptied once posted left its pages two thirds
-- empty for good (new rows go to the end of their range, never back to those pages), so the
-- search table was over three times what it holds. A pending row goes when its postings are
-- written, and with its search row (`search_unpended`); its pages are reused.
CREATE TABLE search_pending (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    words TEXT NOT NULL,
    PRIMARY KEY (thread, agent, line, level, idx)
) WITHOUT ROWID;
INSERT INTO search_pending (thread, agent, line, level, idx, words)
SELECT thread, agent, line, level, idx, words FROM search WHERE NOT posted;
ALTER TABLE search DROP COLUMN words;
CREATE TRIGGER search_unpended AFTER DELETE ON search
BEGIN
    DELETE FROM search_pending
    WHERE thread = OLD.thread AND agent = OLD.agent AND line = OLD.line AND level = OLD.level
        AND idx = OLD.idx;
END;
