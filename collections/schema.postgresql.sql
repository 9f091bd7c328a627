-- The current schema, whole, on PostgreSQL (schema.sql is SQLite's and says what the file is):
-- what every migration step makes, in one file to read. It is not a step.

-- The steps applied, by name (made before any other, so it may be here already).
CREATE TABLE IF NOT EXISTS migration (name TEXT PRIMARY KEY, applied TEXT NOT NULL);

-- Every message the app handed over, whole and never edited: the log the rest derives from.
-- seq is the arrival order in the thread; idx the index among its shared messages (null for
-- steps); sidx the index among its author's steps (null for shared messages); native the
-- message as its agent's provider sent it.
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
    sidx BIGINT,
    native TEXT,
    UNIQUE (thread, seq)
);
CREATE INDEX message_thread_idx ON message (thread, idx);
CREATE INDEX message_thread_sidx ON message (thread, author, sidx);

-- Each thread's outline and tail, one row, moved forward by every commit (version).
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
    version BIGINT NOT NULL,
    floor BIGINT NOT NULL DEFAULT 0,
    steps TEXT NOT NULL DEFAULT '{}'
);

-- The nodes: each message's line (level 0) and each fold's parent, by agent ('' for the shared
-- outline, an agent's name for its steps'); fallback when it was cut, not written.
CREATE TABLE summary (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    message TEXT,
    at TEXT NOT NULL,
    fallback INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT summary_v2_pkey PRIMARY KEY (thread, agent, level, idx)
);

-- A node's texts after its first (a rename, a line asked again; the first stays in summary),
-- and which generation each thread shows.
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
CREATE TABLE generation_shown (
    thread TEXT PRIMARY KEY,
    made BIGINT NOT NULL,
    shown BIGINT NOT NULL
);

-- Each thread's title, settings and space.
CREATE TABLE thread (
    thread TEXT PRIMARY KEY,
    title TEXT,
    settings TEXT,
    space TEXT
);
CREATE INDEX thread_title_idx ON thread (title);

-- The display names of a thread's authors.
CREATE TABLE author_name (
    thread TEXT NOT NULL,
    author TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (thread, author)
);

-- The recorded summarizer calls, each by the key of its prompts: replayed, never asked twice.
-- packed holds prompts and answers compressed; model_key names the model in call_model.
CREATE TABLE call (
    thread TEXT NOT NULL,
    key TEXT NOT NULL,
    n BIGINT NOT NULL,
    model TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    prompts TEXT NOT NULL,
    answers TEXT NOT NULL,
    line TEXT NOT NULL,
    outcome TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    agent TEXT NOT NULL DEFAULT '',
    packed BYTEA,
    model_key TEXT,
    PRIMARY KEY (thread, key)
);
CREATE INDEX call_thread_n ON call (thread, n);
CREATE TABLE call_model (key TEXT PRIMARY KEY, model TEXT NOT NULL);

-- What each commit did to its thread's outline, by the seq of the message that made it.
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

-- A lease on each thread a process processes (history/store/_claims.py).
CREATE TABLE lease (
    thread TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    wanted INTEGER NOT NULL DEFAULT 0
);

-- Search: one row per message or line indexed (search), its words until they are posted
-- (search_pending, gone with its row), each thread's words numbered (search_word), the postings
-- of a word among 64 rows of a level packed in one row (search_term: the row's offsets among
-- the 64, ascending, and how often each holds the word; SQLite keeps a row a posting), each
-- thread's counts kept by triggers (search_corpus), and the language the index stems in
-- (search_language).
CREATE TABLE search (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    length INTEGER NOT NULL,
    at TEXT NOT NULL,
    since TEXT NOT NULL,
    message TEXT,
    PRIMARY KEY (thread, agent, line, level, idx) INCLUDE (length, at)
);
CREATE TABLE search_pending (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    words TEXT NOT NULL,
    PRIMARY KEY (thread, agent, line, level, idx),
    FOREIGN KEY (thread, agent, line, level, idx) REFERENCES search ON DELETE CASCADE
);
CREATE TABLE search_word (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    stem TEXT NOT NULL,
    UNIQUE (thread, agent, stem)
);
CREATE TABLE search_term (
    word BIGINT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    bucket BIGINT NOT NULL,
    idxs SMALLINT[] NOT NULL,
    ns INTEGER[] NOT NULL,
    PRIMARY KEY (word, line, level, bucket)
);
CREATE TABLE search_corpus (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    count BIGINT NOT NULL,
    terms BIGINT NOT NULL,
    PRIMARY KEY (thread, agent, line)
);
CREATE TABLE search_language (language TEXT NOT NULL);
-- A row's words (` a  b `) as its terms.
CREATE FUNCTION search_terms(words TEXT) RETURNS SETOF TEXT LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT t FROM unnest(string_to_array(btrim(words), '  ')) AS t WHERE t <> ''
$$;
CREATE FUNCTION search_counted() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_corpus AS c (thread, agent, line, count, terms)
    VALUES (NEW.thread, NEW.agent, NEW.line, 1, NEW.length)
    ON CONFLICT (thread, agent, line)
    DO UPDATE SET count = c.count + 1, terms = c.terms + excluded.terms;
    RETURN NULL;
END
$$;
CREATE FUNCTION search_uncounted() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE search_corpus SET count = count - 1, terms = terms - OLD.length
    WHERE thread = OLD.thread AND agent = OLD.agent AND line = OLD.line;
    DELETE FROM search_corpus
    WHERE thread = OLD.thread AND agent = OLD.agent AND line = OLD.line AND count = 0;
    RETURN NULL;
END
$$;
CREATE TRIGGER search_counted AFTER INSERT ON search FOR EACH ROW
    EXECUTE FUNCTION search_counted();
CREATE TRIGGER search_uncounted AFTER DELETE ON search FOR EACH ROW
    EXECUTE FUNCTION search_uncounted();

-- Storing a message in one round trip: its thread's next seq under the thread's lock, and the
-- thread's outline with its first message (history/store/_writes.py does the same on SQLite).
CREATE FUNCTION store_message(
    p_space INTEGER, p_id TEXT, p_thread TEXT, p_author TEXT, p_to TEXT, p_text TEXT,
    p_at TEXT, p_step BOOLEAN, p_files TEXT, p_weight BIGINT, p_native TEXT, p_outline TEXT
) RETURNS TABLE (seq BIGINT, idx BIGINT, sidx BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    placed RECORD;
BEGIN
    PERFORM pg_advisory_xact_lock(p_space, hashtext(p_thread));
    INSERT INTO message AS m
        (id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx, native)
    VALUES (
        p_id, p_thread,
        coalesce((SELECT max(e.seq) FROM message AS e WHERE e.thread = p_thread), -1) + 1,
        CASE WHEN p_step THEN NULL
             ELSE coalesce((SELECT max(e.idx) FROM message AS e WHERE e.thread = p_thread), -1) + 1
        END,
        p_author, p_to, p_text, p_at, p_step, p_files, p_weight,
        CASE WHEN p_step THEN coalesce((SELECT max(e.sidx) FROM message AS e
                                        WHERE e.thread = p_thread AND e.author = p_author), -1) + 1
        END,
        p_native
    )
    ON CONFLICT (id) DO NOTHING
    RETURNING m.seq, m.idx, m.sidx INTO placed;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF placed.seq = 0 THEN
        INSERT INTO outline
        SELECT * FROM json_populate_record(NULL::outline, p_outline::json)
        ON CONFLICT (thread) DO NOTHING;
    END IF;
    RETURN QUERY SELECT placed.seq, placed.idx, placed.sidx;
END
$$;
