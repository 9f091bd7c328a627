-- Search's postings (SQLite; `search_terms.postgresql.sql` is PostgreSQL's): each row's terms,
-- each with how often the row holds it. A term carries the key of its thread and agent
-- (`history.terms.key`), so a query reads its own terms' postings in its own thread, in the
-- primary key's order, and nothing of the rows' text or words: what ranking needs of a
-- candidate is here (`n`) and in `search_place` (its length and `at`). Written from `search` by
-- its triggers, so a row and its postings change together; they replace the FTS5 index, whose
-- terms were the same and whose counts a search had to take from each row's words.
DROP TRIGGER search_added;
DROP TRIGGER search_removed;
DROP TABLE search_words;
CREATE TABLE search_term (
    term TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (term, line, level, idx)
) WITHOUT ROWID;
-- A row's words (` a  b `) as a JSON array of its terms (`["a","b"]`): terms are letters and
-- digits after a key of hexadecimal digits, so none needs escaping.
CREATE TRIGGER search_added AFTER INSERT ON search
BEGIN
    INSERT INTO search_term (term, line, level, idx, n)
    SELECT value, NEW.line, NEW.level, NEW.idx, count(*)
    FROM json_each('["' || replace(trim(NEW.words), '  ', '","') || '"]')
    WHERE value <> '' GROUP BY value;
END;
CREATE TRIGGER search_removed AFTER DELETE ON search
BEGIN
    DELETE FROM search_term
    WHERE term IN (SELECT value FROM json_each('["' || replace(trim(OLD.words), '  ', '","') || '"]'))
        AND line = OLD.line AND level = OLD.level AND idx = OLD.idx;
END;
INSERT INTO search_term (term, line, level, idx, n)
SELECT value, search.line, search.level, search.idx, count(*)
FROM search, json_each('["' || replace(trim(search.words), '  ', '","') || '"]')
WHERE value <> '' GROUP BY search.id, value;
-- What ranking reads of a candidate and of the messages around it, and the sizes of a thread's
-- corpus, from the index alone (a row's length comes after its text and words in the table).
CREATE INDEX search_place ON search (thread, agent, line, level, idx, length, at);
