-- A search row's words wait for its postings in a table of their own (PostgreSQL;
-- `search_pending.sql` is SQLite's and says why); a pending row goes with its search row.
CREATE TABLE search_pending (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    words TEXT NOT NULL,
    PRIMARY KEY (thread, agent, line, level, idx),
    FOREIGN KEY (thread, agent, line, level, idx) REFERENCES search ON DELETE CASCADE
);
INSERT INTO search_pending (thread, agent, line, level, idx, words)
SELECT thread, agent, line, level, idx, words FROM search WHERE NOT posted;
ALTER TABLE search DROP COLUMN words;
