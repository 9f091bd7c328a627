-- One row per thread with stored messages: what an agent is sent in place of the old messages.
-- lines: JSON [[level, idx, bytes, at], ...] oldest first; bytes: the sum of bytes + 1 over lines.
-- The tail is the thread's messages with tail_start <= seq <= position; tokens is their weight.
-- epoch is new for every incarnation of a thread id, so an erase always wins over a batch in flight.
CREATE TABLE outline (
    thread TEXT PRIMARY KEY,
    epoch TEXT NOT NULL,
    lines TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    boundary BIGINT NOT NULL,
    since TEXT,
    cut_at TEXT,
    gone TEXT,
    tail_start BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    draining BOOLEAN NOT NULL,
    position BIGINT NOT NULL,
    version BIGINT NOT NULL
);
