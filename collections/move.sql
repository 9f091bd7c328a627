-- One row per commit that changed a thread's lines (a cut, a fold or both): where its prompt's
-- start moved, and what the outline and tail were after it. seq is the message that made it;
-- from_boundary the outline's boundary before it (0 for a thread recorded from its start).
-- What the viewer's "over time" chart reads, with the messages' weights between moves.
CREATE TABLE move (
    thread TEXT NOT NULL,
    seq BIGINT NOT NULL,
    cut BOOLEAN NOT NULL,
    folded BOOLEAN NOT NULL,
    from_boundary BIGINT NOT NULL,
    boundary BIGINT NOT NULL,
    lines BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    tail_start BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (thread, seq)
);
