-- SPEC version 2: a step tree per agent, and the cut gap.
-- summary: `agent` joins the key ('' for the shared tree, the step's agent for its step tree).
-- A key cannot change in place on SQLite, so the table is rebuilt (the same steps on PostgreSQL).
CREATE TABLE summary_v2 (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    message TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (thread, agent, level, idx)
);
INSERT INTO summary_v2 (thread, agent, level, idx, text, bytes, message, at)
SELECT thread, '', level, idx, text, bytes, message, at FROM summary;
DROP TABLE summary;
ALTER TABLE summary_v2 RENAME TO summary;
-- message: a step's index among its agent's (its author's) steps in the thread; null if shared.
ALTER TABLE message ADD COLUMN sidx BIGINT;
UPDATE message SET sidx = (
    SELECT count(*) FROM message AS earlier
    WHERE earlier.thread = message.thread AND earlier.step AND earlier.author = message.author
      AND earlier.seq < message.seq
) WHERE step;
CREATE INDEX message_thread_sidx ON message (thread, author, sidx);
-- outline: floor (the tail's tokens after the last message whose cut condition held) and each
-- agent's step outline, JSON {agent: {lines, bytes, boundary, draining}}. A thread stored
-- before this goes on with floor 0 and no step outlines: its steps that already left keep no line.
ALTER TABLE outline ADD COLUMN floor BIGINT NOT NULL DEFAULT 0;
ALTER TABLE outline ADD COLUMN steps TEXT NOT NULL DEFAULT '{}';
-- call: the tree a recorded conversation wrote into.
ALTER TABLE call ADD COLUMN agent TEXT NOT NULL DEFAULT '';
