-- The tree: the line at (level, idx) covers the 2**level shared messages from idx * 2**level on.
-- message: level 0's message id; at: the newest at among the messages the node covers.
CREATE TABLE summary (
    thread TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    message TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (thread, level, idx)
);
