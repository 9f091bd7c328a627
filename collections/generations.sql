-- Display names (docs/generations.md, section 2): an author's name store-wide (thread '') or in
-- one thread. A message keeps its author and to as given; lines and headers read these.
CREATE TABLE author_name (
    thread TEXT NOT NULL,
    author TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (thread, author)
);
-- A node's texts after its first (generation 0 stays in summary, the tree the processor reads):
-- generation 1, 2, ... made by renames and re-summaries; the newest is the node's current text.
-- form: line, join or model (how the text was made); made: the thread's change that wrote it.
CREATE TABLE generation (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    generation INTEGER NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    form TEXT NOT NULL,
    fallback INTEGER NOT NULL,
    made BIGINT NOT NULL,
    PRIMARY KEY (thread, agent, level, idx, generation)
);
-- Per thread with changes: made, the number of its newest change; shown, the newest change the
-- outline its agents are sent has taken (moved at a cut or a fold, or at once when asked).
CREATE TABLE generation_shown (
    thread TEXT PRIMARY KEY,
    made BIGINT NOT NULL,
    shown BIGINT NOT NULL
);
