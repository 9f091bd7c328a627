-- Search's postings (PostgreSQL; `search_terms.sql` is SQLite's): each row's terms, each with
-- how often the row holds it. A term carries the key of its thread and agent
-- (`history.terms.key`), so a query reads its own terms' postings in its own thread from the
-- primary key, and nothing of the rows' text or words: what ranking needs of a candidate is
-- here (`n`) and in `search_place` (its length and `at`). Written from `search` by its
-- triggers, so a row and its postings change together; they replace the GIN index, whose terms
-- were the same and whose counts a search had to take from each row's words.
DROP INDEX search_words;
CREATE TABLE search_term (
    term TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (term, line, level, idx) INCLUDE (n)
);
-- A row's words (` a  b `) as its terms.
CREATE FUNCTION search_terms(words TEXT) RETURNS SETOF TEXT LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT t FROM unnest(string_to_array(btrim(words), '  ')) AS t WHERE t <> ''
$$;
CREATE FUNCTION search_added() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_term (term, line, level, idx, n)
    SELECT t, NEW.line, NEW.level, NEW.idx, count(*) FROM search_terms(NEW.words) AS t GROUP BY t;
    RETURN NULL;
END
$$;
CREATE FUNCTION search_removed() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_term
    WHERE term IN (SELECT search_terms(OLD.words))
        AND line = OLD.line AND level = OLD.level AND idx = OLD.idx;
    RETURN NULL;
END
$$;
CREATE TRIGGER search_added AFTER INSERT ON search FOR EACH ROW EXECUTE FUNCTION search_added();
CREATE TRIGGER search_removed AFTER DELETE ON search FOR EACH ROW
    EXECUTE FUNCTION search_removed();
INSERT INTO search_term (term, line, level, idx, n)
SELECT t, s.line, s.level, s.idx, count(*)
FROM search AS s, search_terms(s.words) AS t GROUP BY s.thread, s.agent, s.line, s.level, s.idx, t;
-- What ranking reads of a candidate and of the messages around it, and the sizes of a thread's
-- corpus, from the index alone.
CREATE INDEX search_place ON search (thread, agent, line, level, idx) INCLUDE (length, at);
-- The planner's figures for the tables just filled: without them it takes a term's postings for
-- a large share of the table and plans (and compiles) a search as a scan of it.
ANALYZE search_term;
ANALYZE search;
