-- Every message the app handed over, whole and never edited: the log the rest derives from.
-- seq is the arrival order in the thread; idx the index among its shared messages (null for steps).
CREATE TABLE message (
    id TEXT PRIMARY KEY,
    thread TEXT NOT NULL,
    seq BIGINT NOT NULL,
    idx BIGINT,
    author TEXT NOT NULL,
    "to" TEXT NOT NULL,
    text TEXT NOT NULL,
    at TEXT NOT NULL,
    step BOOLEAN NOT NULL,
    files TEXT NOT NULL,
    weight BIGINT NOT NULL,
    UNIQUE (thread, seq)
);
CREATE INDEX message_thread_idx ON message (thread, idx);
