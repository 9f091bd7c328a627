-- Storing a message in one round trip (PostgreSQL; SQLite has nothing to do, see
-- `store_message.sql`). It took four: BEGIN, the thread's lock, the INSERT and COMMIT. The
-- function does what `history.store._writes.store_message` does, in its one statement's
-- transaction: it takes the thread's lock (the one an erase and a load take), stores the message
-- with its thread's next seq, idx and step index as `insert_message` does (each statement in it
-- reads what was committed before it, so the lock orders two processes storing in one thread),
-- and makes the thread's outline row with its first message (`p_outline`: the row as JSON, as
-- `history.store._rows.new_outline_row` gives it). Nothing back for a known id.
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
