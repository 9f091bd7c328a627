-- Search, keyed by thread and stemmed (PostgreSQL; `search2.sql` is SQLite's). One row per
-- line (`line`: a summary, of the shared tree or of an agent's steps) and per message (level
-- 0, idx its index). agent: '' for shared rows, else the agent whose step it is.
-- since, at: the oldest and newest instants it covers (a message's own at, twice).
-- words: the row's terms as `history.terms` makes them (each prefixed with the key of its thread
-- and agent), in order; length: how many. The rows are written by the store's code, in the
-- transactions that write what they index, and filled when the store opens (the stemming is
-- in Python, so that both stores index the same terms).
DROP FUNCTION search_message() CASCADE;
DROP FUNCTION search_line(message);
DROP TABLE search;
DROP FUNCTION search_fold(TEXT);
CREATE TABLE search (
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
    PRIMARY KEY (thread, agent, line, level, idx)
);
-- The full-text index of the words: a keyed term's postings are one thread's rows.
CREATE INDEX search_words ON search USING GIN (string_to_array(words, ' '));
-- The language the rows are stemmed in: a store opened with another one indexes again.
CREATE TABLE search_language (language TEXT NOT NULL);
