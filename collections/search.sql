-- Full-text search over a thread's lines and shared messages (SQLite FTS5; a PostgreSQL store
-- searches with its own full-text index). One row per summary (message null) and per shared
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
INSERT INTO search (text, thread, level, idx, message, at)
SELECT
    author || CASE WHEN "to" = '' THEN '' ELSE ' → ' || "to" END || ': ' || text
        || coalesce((SELECT group_concat(' [' || json_extract(f.value, '$.name') || ']', '')
                     FROM json_each(message.files) AS f), ''),
    thread, 0, idx, id, at
FROM message WHERE NOT step;
