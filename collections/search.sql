-- Full-text search over a thread's lines and shared messages (SQLite FTS5; a PostgreSQL store
-- searches with its own full-text index, `search.postgresql.sql`). One row per summary (message null) and per shared
-- message (level 0, idx its index, message its id, text its line: author, text, file names).
-- Kept in step with the rows it indexes, in the same transactions; filled from them here.
CREATE VIRTUAL TABLE search USING fts5(
    text,
    thread UNINDEXED,
    level UNINDEXED,
    idx UNINDEXED,
    message UNINDEXED,
    at UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO search (text, thread, level, idx, message, at)
SELECT text, thread, level, idx, NULL, at FROM summary;
-- A shared message's line, as `line_of` writes it: newlines as spaces, then its file names.
INSERT INTO search (text, thread, level, idx, message, at)
SELECT
    author || CASE WHEN "to" = '' THEN '' ELSE ' → ' || "to" END || ': '
        || replace(replace(replace(text, char(13) || char(10), ' '), char(10), ' '), char(13), ' ')
        || coalesce((SELECT group_concat(' [' || json_extract(f.value, '$.name') || ']', '')
                     FROM json_each(message.files) AS f), ''),
    thread, 0, idx, id, at
FROM message WHERE NOT step;
-- From now on each shared message is indexed in the statement that stores it.
CREATE TRIGGER search_message AFTER INSERT ON message WHEN NOT NEW.step
BEGIN
    INSERT INTO search (text, thread, level, idx, message, at)
    SELECT
        NEW.author || CASE WHEN NEW."to" = '' THEN '' ELSE ' → ' || NEW."to" END || ': '
            || replace(replace(replace(NEW.text, char(13) || char(10), ' '), char(10), ' '),
                       char(13), ' ')
            || coalesce((SELECT group_concat(' [' || json_extract(f.value, '$.name') || ']', '')
                         FROM json_each(NEW.files) AS f), ''),
        NEW.thread, 0, NEW.idx, NEW.id, NEW.at;
END;
