-- Full-text search over a thread's lines and shared messages, on PostgreSQL (`search.sql` is
-- SQLite's). One row per summary (message null) and per shared message (level 0, idx its index,
-- message its id, text its line: author, text, file names). Kept in step with the rows it
-- indexes, in the same transactions; filled from them here.
-- A text as search compares it: Latin letters without their accents (`é` is `e`), as SQLite's
-- tokenizer has them (remove_diacritics); other scripts keep theirs.
CREATE FUNCTION search_fold(TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT normalize(regexp_replace(normalize($1, NFD), '([A-Za-z])[\u0300-\u036f]+', '\1', 'g'), NFC)
$$;
-- words: the text's words as SQLite's tokenizer splits them (punctuation separates words, so
-- `f1.pdf` is `f1` and `pdf`), folded and lowercased, neither stemmed nor dropped as stop words.
CREATE TABLE search (
    text TEXT NOT NULL,
    thread TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    message TEXT,
    at TEXT NOT NULL,
    words TSVECTOR NOT NULL
        GENERATED ALWAYS AS (
            to_tsvector('simple', regexp_replace(search_fold(text), '[[:punct:]]+', ' ', 'g'))
        ) STORED
);
CREATE INDEX search_words ON search USING GIN (words);
CREATE INDEX search_thread ON search (thread, level, idx);
-- A shared message's line, as `line_of` writes it: newlines as spaces, then its file names.
CREATE FUNCTION search_line(m message) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
SELECT m.author || CASE WHEN m."to" = '' THEN '' ELSE ' → ' || m."to" END || ': '
    || replace(replace(replace(m.text, E'\r\n', ' '), E'\n', ' '), E'\r', ' ')
    || coalesce((SELECT string_agg(' [' || (f.value ->> 'name') || ']', '' ORDER BY f.n)
                 FROM json_array_elements(m.files::json) WITH ORDINALITY AS f (value, n)), '')
$$;
CREATE FUNCTION search_message() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search (text, thread, level, idx, message, at)
    VALUES (search_line(NEW), NEW.thread, 0, NEW.idx, NEW.id, NEW.at);
    RETURN NULL;
END
$$;
-- From now on each shared message is indexed in the transaction that stores it. The trigger
-- comes before the filling: creating it waits for messages being stored and holds off new ones
-- until this step commits, so none is indexed twice or missed.
CREATE TRIGGER search_message AFTER INSERT ON message FOR EACH ROW WHEN (NOT NEW.step)
    EXECUTE FUNCTION search_message();
INSERT INTO search (text, thread, level, idx, message, at)
SELECT text, thread, level, idx, NULL, at FROM summary;
INSERT INTO search (text, thread, level, idx, message, at)
SELECT search_line(message), thread, 0, idx, id, at FROM message WHERE NOT step;
