-- Search, keyed by thread and stemmed (SQLite; `search2.postgresql.sql` is PostgreSQL's). One
-- row per line (`line`: a summary, of the shared tree or of an agent's steps) and per message
-- (level 0, idx its index). agent: '' for shared rows, else the agent whose step it is.
-- since, at: the oldest and newest instants it covers (a message's own at, twice).
-- words: the row's terms as `history.terms` makes them (each prefixed with the key of its thread
-- and agent), in order; length: how many. The rows are written by the store's code, in the
-- transactions that write what they index, and filled when the store opens (the stemming is
-- in Python, so that both stores index the same terms).
DROP TRIGGER search_message;
DROP TABLE search;
CREATE TABLE search (
    id INTEGER PRIMARY KEY,
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    message TEXT,
    since TEXT NOT NULL,
    at TEXT NOT NULL,
    text TEXT NOT NULL,
    words TEXT NOT NULL,
    length INTEGER NOT NULL,
    UNIQUE (thread, agent, line, level, idx)
);
-- The full-text index of the words: a keyed term's postings are one thread's rows.
CREATE VIRTUAL TABLE search_words USING fts5(
    words, content = 'search', content_rowid = 'id', tokenize = 'ascii'
);
CREATE TRIGGER search_added AFTER INSERT ON search
BEGIN
    INSERT INTO search_words (rowid, words) VALUES (NEW.id, NEW.words);
END;
CREATE TRIGGER search_removed AFTER DELETE ON search
BEGIN
    INSERT INTO search_words (search_words, rowid, words) VALUES ('delete', OLD.id, OLD.words);
END;
-- The language the rows are stemmed in: a store opened with another one indexes again.
CREATE TABLE search_language (language TEXT NOT NULL);
