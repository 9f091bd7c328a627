-- Search as compact as its ranking allows (SQLite; `search_compact.postgresql.sql` is
-- PostgreSQL's). A store's index was several times what it indexed: each row kept its text (the
-- message's line, or the line) and its words, each keyed by 16 hexadecimal digits, for ever,
-- and each posting its keyed term again.
-- - search_word: a thread's terms for one agent ('': the shared rows), each numbered once.
-- - search_term: the postings, by the term's number: how often each row holds it.
-- - search: one row per line and per message as before, without its text (a hit's text is read
--   from its summary or its message) and keyed by its place (WITHOUT ROWID: the table is its own
--   index of places, `length` and `at` in it). `words` holds its stems (` a  b `) only until its
--   postings are written; an erase deletes a thread's postings by its terms' numbers.
-- The index is made again when the store opens (the language forgotten here), as after
-- `search_keys.sql`.
DROP TABLE search_term;
DROP TABLE search;
DELETE FROM search_corpus;
DELETE FROM search_language;
CREATE TABLE search (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    length INTEGER NOT NULL,
    at TEXT NOT NULL,
    since TEXT NOT NULL,
    message TEXT,
    words TEXT NOT NULL,
    posted BOOLEAN NOT NULL,
    PRIMARY KEY (thread, agent, line, level, idx)
) WITHOUT ROWID;
CREATE INDEX search_unposted ON search (thread, agent) WHERE NOT posted;
CREATE TABLE search_word (
    id INTEGER PRIMARY KEY,
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    stem TEXT NOT NULL,
    UNIQUE (thread, agent, stem)
);
CREATE TABLE search_term (
    word INTEGER NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (word, line, level, idx)
) WITHOUT ROWID;
CREATE TRIGGER search_counted AFTER INSERT ON search
BEGIN
    INSERT INTO search_corpus (thread, agent, line, count, terms)
    VALUES (NEW.thread, NEW.agent, NEW.line, 1, NEW.length)
    ON CONFLICT (thread, agent, line)
    DO UPDATE SET count = count + 1, terms = terms + excluded.terms;
END;
CREATE TRIGGER search_uncounted AFTER DELETE ON search
BEGIN
    UPDATE search_corpus SET count = count - 1, terms = terms - OLD.length
    WHERE thread = OLD.thread AND agent = OLD.agent AND line = OLD.line;
    DELETE FROM search_corpus
    WHERE thread = OLD.thread AND agent = OLD.agent AND line = OLD.line AND count = 0;
END;
