-- What a thread is called and how it was built: one row per thread given a title or processed.
-- title: a name people know it by (a ChatGPT conversation's title), shown and searched.
-- settings: JSON, the settings its tree and outline were built with (line, tail, outline, kept,
-- tries, encoding, summarizer, ...), recorded when it is first processed and by a rebuild.
CREATE TABLE thread (
    thread TEXT PRIMARY KEY,
    title TEXT,
    settings TEXT
);
CREATE INDEX thread_title_idx ON thread (title);
