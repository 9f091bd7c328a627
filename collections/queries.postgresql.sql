-- PostgreSQL's text of the entries of `queries.sql` whose dialects differ. Lists are arrays;
-- thread ids and agents sort in code-point order (`COLLATE "C"`), whatever the database's
-- collation.

-- name: tables
SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema();

-- name: outline
SELECT thread, epoch, lines, bytes, boundary, since, cut_at, gone, tail_start, tokens, draining,
       position, version, floor, steps,
       (SELECT coalesce(json_agg(json_build_array(id, weight, at, step, seq) ORDER BY seq), '[]')
        FROM message
        WHERE message.thread = outline.thread AND seq >= tail_start AND seq <= position) AS tail
FROM outline WHERE thread = :thread;

-- name: lock_outline
SELECT 1 FROM outline WHERE thread = :thread FOR UPDATE;

-- name: nodes
-- The levels and indexes as arrays. A key is unique; its `LIMIT 1` also keeps the planner from
-- reading the thread's nodes for a join instead.
SELECT s.thread, s.level, s.idx, s.text, s.bytes, s.message, s.at, s.agent, s.fallback
FROM unnest(:levels::integer[], :indexes::bigint[]) AS k (level, idx)
CROSS JOIN LATERAL (SELECT * FROM summary
                    WHERE thread = :thread AND agent = :agent AND level = k.level
                      AND idx = k.idx LIMIT 1) AS s;

-- name: summaries
SELECT thread, level, idx, text, bytes, message, at, agent, fallback FROM summary
WHERE thread = :thread ORDER BY agent COLLATE "C", level, idx;

-- name: all_summaries
SELECT thread, level, idx, text, bytes, message, at, agent, fallback FROM summary
ORDER BY thread COLLATE "C", agent COLLATE "C", level, idx;

-- name: first_at
SELECT idx, at FROM message WHERE thread = :thread AND NOT step AND idx = ANY(:indexes::bigint[]);

-- name: all_calls
SELECT c.thread, c.key, c.n, coalesce(m.model, c.model) AS model, c.level, c.idx, c.prompts,
       c.answers, c.line, c.outcome, c.input_tokens, c.output_tokens, c.agent, c.packed
FROM call AS c LEFT JOIN call_model AS m ON m.key = c.model_key
ORDER BY c.thread COLLATE "C", c.n;

-- name: threads
-- A thread's outline row is written in the transaction of its first message, so the outlines
-- name every thread (and far fewer rows than the messages do).
SELECT thread FROM outline ORDER BY thread COLLATE "C";

-- name: behind
-- Each outline row is checked against the (thread, seq) index: workers poll this.
SELECT o.thread FROM outline o
WHERE EXISTS (SELECT 1 FROM message m WHERE m.thread = o.thread AND m.seq > o.position)
ORDER BY o.thread COLLATE "C";

-- name: all_about
SELECT thread, title, settings, space FROM thread ORDER BY thread COLLATE "C";

-- name: foreign_ids
SELECT id, thread FROM message WHERE thread <> :thread AND id = ANY(:ids::text[]);

-- name: search_postings
-- A term's postings are packed 64 to a row (`search_term`, step 0090): each read unnests the
-- rows it reads, a posting's index being `bucket * 64` plus its offset.
SELECT w.stem AS term, t.line, t.level, t.bucket * 64 + p.o AS idx, p.n, s.length, s.at
FROM unnest(:terms::text[]) AS k (term)
CROSS JOIN LATERAL (
    SELECT id, stem FROM search_word
    WHERE thread = :thread AND agent = :agent AND stem = k.term LIMIT 1
) AS w
JOIN search_term AS t ON t.word = w.id
CROSS JOIN LATERAL unnest(t.idxs, t.ns) AS p (o, n)
CROSS JOIN LATERAL (
    SELECT length, at FROM search
    WHERE thread = :thread AND agent = :agent AND line = t.line AND level = t.level
      AND idx = t.bucket * 64 + p.o
    LIMIT 1
) AS s;

-- name: unposted
-- Each waiting row's search row by its key (LATERAL), here and in `search_unposted`: joined as
-- tables, without statistics the planner read every search row of the thread and looked each
-- up among the waiting ones.
SELECT count(*) AS count, coalesce(sum(s.length), 0) AS terms
FROM search_pending AS p
CROSS JOIN LATERAL (
    SELECT length FROM search
    WHERE thread = p.thread AND agent = p.agent AND line = p.line AND level = p.level
      AND idx = p.idx
    LIMIT 1
) AS s
WHERE p.thread = :thread AND NOT p.line;

-- name: search_unposted
SELECT s.line, s.level, s.idx, p.words, s.length, s.at
FROM search_pending AS p
CROSS JOIN LATERAL (
    SELECT line, level, idx, length, at FROM search
    WHERE thread = p.thread AND agent = p.agent AND line = p.line AND level = p.level
      AND idx = p.idx
    LIMIT 1
) AS s
WHERE p.thread = :thread AND p.agent = :agent;

-- name: search_frequencies
-- Each row holds one posting at least, so the first `:cap + 1` rows hold more than `:cap` when
-- the term has; `last` is found in the row where the running count passes `:cap`.
SELECT w.stem AS term, l.line,
       (SELECT least(coalesce(sum(cardinality(idxs)), 0), :cap + 1) FROM (
            SELECT idxs FROM search_term WHERE word = w.id AND line = l.line
            ORDER BY level, bucket LIMIT :cap + 1) AS c) AS count,
       (SELECT c.level::bigint * 4294967296 + c.bucket * 64
               + c.idxs[1 + :cap - (c.upto - cardinality(c.idxs))]
        FROM (SELECT level, bucket, idxs,
                     sum(cardinality(idxs)) OVER (ORDER BY level, bucket) AS upto
              FROM (SELECT level, bucket, idxs FROM search_term
                    WHERE word = w.id AND line = l.line
                    ORDER BY level, bucket LIMIT :cap + 1) AS f) AS c
        WHERE c.upto > :cap ORDER BY c.level, c.bucket LIMIT 1) AS last
FROM unnest(:terms::text[]) AS k (term)
CROSS JOIN LATERAL (
    SELECT id, stem FROM search_word
    WHERE thread = :thread AND agent = :agent AND stem = k.term LIMIT 1
) AS w
CROSS JOIN (VALUES (FALSE), (TRUE)) AS l (line);

-- name: search_newest
-- The newest rows whose postings reach `:cap`, read backwards along the key, then their newest
-- `:cap` postings.
SELECT w.stem AS term, t.line, t.level, t.idx, t.n, s.length, s.at
FROM (
    SELECT id, stem FROM search_word
    WHERE thread = :thread AND agent = :agent AND stem = :term LIMIT 1
) AS w
CROSS JOIN LATERAL (
    SELECT c.line, c.level, c.bucket * 64 + p.o AS idx, p.n
    FROM (SELECT line, level, bucket, idxs, ns,
                 sum(cardinality(idxs)) OVER (ORDER BY level DESC, bucket DESC)
                     - cardinality(idxs) AS before
          FROM (SELECT line, level, bucket, idxs, ns FROM search_term
                WHERE word = w.id AND line = :line
                ORDER BY level DESC, bucket DESC LIMIT :cap) AS f) AS c
    CROSS JOIN LATERAL unnest(c.idxs, c.ns) AS p (o, n)
    WHERE c.before < :cap
    ORDER BY c.level DESC, idx DESC LIMIT :cap
) AS t
CROSS JOIN LATERAL (
    SELECT length, at FROM search
    WHERE thread = :thread AND agent = :agent AND line = t.line AND level = t.level
      AND idx = t.idx
    LIMIT 1
) AS s
ORDER BY t.level DESC, t.idx DESC;

-- name: search_together
SELECT t.idx FROM unnest(:terms::text[]) AS k (term)
CROSS JOIN LATERAL (
    SELECT id FROM search_word
    WHERE thread = :thread AND agent = :agent AND stem = k.term LIMIT 1
) AS w
CROSS JOIN LATERAL (
    SELECT c.bucket * 64 + p.o AS idx
    FROM (SELECT bucket, idxs,
                 sum(cardinality(idxs)) OVER (ORDER BY bucket DESC) - cardinality(idxs) AS before
          FROM (SELECT bucket, idxs FROM search_term
                WHERE word = w.id AND line = FALSE AND level = 0
                ORDER BY bucket DESC LIMIT :cap) AS f) AS c
    CROSS JOIN LATERAL unnest(c.idxs) AS p (o)
    WHERE c.before < :cap
    ORDER BY idx DESC LIMIT :cap
) AS t
GROUP BY t.idx HAVING count(*) >= 2
ORDER BY t.idx DESC LIMIT :limit;

-- name: search_held
SELECT w.stem AS term, t.line, t.level, k.idx, t.ns[t.at] AS n
FROM unnest(:key_terms::text[], :key_lines::boolean[], :key_levels::integer[],
            :key_indexes::bigint[]) AS k (term, line, level, idx)
CROSS JOIN LATERAL (
    SELECT id, stem FROM search_word
    WHERE thread = :thread AND agent = :agent AND stem = k.term LIMIT 1
) AS w
CROSS JOIN LATERAL (
    SELECT line, level, ns, array_position(idxs, (k.idx % 64)::smallint) AS at FROM search_term
    WHERE word = w.id AND line = k.line AND level = k.level AND bucket = k.idx / 64
    LIMIT 1
) AS t
WHERE t.at IS NOT NULL;

-- name: search_places
SELECT s.idx, s.length, s.at FROM unnest(:indexes::bigint[]) AS k (idx) CROSS JOIN LATERAL (
    SELECT idx, length, at FROM search
    WHERE thread = :thread AND agent = :agent AND NOT line AND level = 0 AND idx = k.idx LIMIT 1
) AS s;

-- name: search_details
SELECT s.agent, s.line, s.level, s.idx, s.message, s.since, n.text AS summary, m.author,
       m."to" AS addressee, m.text, m.at, m.files
FROM unnest(:key_agents::text[], :key_lines::boolean[], :key_levels::integer[],
            :key_indexes::bigint[]) AS k (agent, line, level, idx)
CROSS JOIN LATERAL (
    SELECT * FROM search
    WHERE thread = :thread AND agent = k.agent AND line = k.line AND level = k.level
      AND idx = k.idx
    LIMIT 1
) AS s
LEFT JOIN summary AS n ON s.line AND n.thread = :thread AND n.agent = s.agent
    AND n.level = s.level AND n.idx = s.idx
LEFT JOIN message AS m ON NOT s.line AND m.id = s.message;

-- name: post_words
-- The terms of the thread's unposted rows that it has not numbered yet.
INSERT INTO search_word (thread, agent, stem)
SELECT DISTINCT s.thread, s.agent, t
FROM search_pending AS s, search_terms(s.words) AS t
WHERE s.thread = :thread
ON CONFLICT (thread, agent, stem) DO NOTHING;

-- name: post_search
-- The postings of the thread's unposted rows, packed by bucket (`search_term`) and merged into
-- the bucket's row where it has one already. Each term's number is looked up by its key
-- (LATERAL): joined as a table, search_word without statistics was planned as the outer loop,
-- and each row's terms were unnested again for every word (a few long messages took minutes).
INSERT INTO search_term AS t (word, line, level, bucket, idxs, ns)
SELECT word, line, level, bucket, array_agg(o ORDER BY o), array_agg(n ORDER BY o)
FROM (
    SELECT w.id AS word, s.line, s.level, s.idx / 64 AS bucket, (s.idx % 64)::smallint AS o,
           count(*)::integer AS n
    FROM search_pending AS s CROSS JOIN search_terms(s.words) AS k
    CROSS JOIN LATERAL (
        SELECT id FROM search_word
        WHERE thread = s.thread AND agent = s.agent AND stem = k LIMIT 1
    ) AS w
    WHERE s.thread = :thread
    GROUP BY w.id, s.line, s.level, s.idx
) AS p
GROUP BY word, line, level, bucket ORDER BY word, line, level, bucket
ON CONFLICT (word, line, level, bucket) DO UPDATE SET (idxs, ns) = (
    SELECT array_agg(u.o ORDER BY u.o), array_agg(u.n ORDER BY u.o)
    FROM unnest(t.idxs || excluded.idxs, t.ns || excluded.ns) AS u (o, n)
);

-- name: node_generations
SELECT g.thread, g.agent, g.level, g.idx, g.generation, g.text, g.bytes, g.form, g.fallback,
       g.made
FROM unnest(:levels::integer[], :indexes::bigint[]) AS k (level, idx)
CROSS JOIN LATERAL (SELECT * FROM generation
                    WHERE thread = :thread AND agent = :agent AND level = k.level
                      AND idx = k.idx AND made <= :upto
                    ORDER BY generation DESC LIMIT 1) AS g;

-- name: take_lease
INSERT INTO lease (thread, owner, expires, wanted)
VALUES (:thread, :owner, extract(epoch FROM clock_timestamp())::double precision + :seconds, 0)
ON CONFLICT (thread) DO UPDATE SET owner = excluded.owner, expires = excluded.expires, wanted = 0
WHERE lease.owner = excluded.owner OR lease.expires < extract(epoch FROM clock_timestamp())::double precision;

-- name: renew_lease
UPDATE lease SET expires = extract(epoch FROM clock_timestamp())::double precision + :seconds WHERE thread = :thread AND owner = :owner;

-- name: unpost
-- A row's postings, by the stems of the text it was indexed from: each taken out of its
-- bucket's row, and a row left empty deleted.
WITH found AS (
    SELECT t.word, array_position(t.idxs, (:idx % 64)::smallint) AS at, cardinality(t.idxs) AS n
    FROM search_word AS w
    JOIN search_term AS t ON t.word = w.id AND t.line = :line AND t.level = :level
        AND t.bucket = :idx / 64
    WHERE w.thread = :thread AND w.agent = :agent AND w.stem = ANY(:stems::text[])
), emptied AS (
    DELETE FROM search_term AS t USING found AS f
    WHERE f.at IS NOT NULL AND f.n = 1 AND t.word = f.word AND t.line = :line
      AND t.level = :level AND t.bucket = :idx / 64
)
UPDATE search_term AS t
SET idxs = t.idxs[1 : f.at - 1] || t.idxs[f.at + 1 :],
    ns = t.ns[1 : f.at - 1] || t.ns[f.at + 1 :]
FROM found AS f
WHERE f.at IS NOT NULL AND f.n > 1 AND t.word = f.word AND t.line = :line
  AND t.level = :level AND t.bucket = :idx / 64;

-- name: line_texts
SELECT s.agent, s.level, s.idx, s.since, s.at, t.text
FROM unnest(:key_agents::text[], :key_levels::integer[], :key_indexes::bigint[])
    AS k (agent, level, idx)
CROSS JOIN LATERAL (
    SELECT agent, level, idx, since, at FROM search
    WHERE thread = :thread AND agent = k.agent AND line AND level = k.level AND idx = k.idx
    LIMIT 1
) AS s
CROSS JOIN LATERAL (
    SELECT text FROM summary
    WHERE thread = :thread AND agent = k.agent AND level = k.level AND idx = k.idx
    UNION ALL
    SELECT text FROM generation
    WHERE thread = :thread AND agent = k.agent AND level = k.level AND idx = k.idx
) AS t;
