-- The statements the store runs, by name (`history/store/_queries.py` reads them). Parameters
-- are named (`:thread`). `queries.postgresql.sql` holds PostgreSQL's text of the entries whose
-- dialects differ; every other entry serves both. On SQLite a list parameter arrives as JSON,
-- read with json_each; on PostgreSQL as an array.

-- name: migration_table
-- The applied migrations, made before any of them.
CREATE TABLE IF NOT EXISTS migration (name TEXT PRIMARY KEY, applied TEXT NOT NULL);

-- name: tables
-- The database's tables: one of ours has `migration` among them, or nothing yet.
SELECT name FROM sqlite_master WHERE type = 'table';

-- name: migrations
SELECT name FROM migration;

-- name: migration
SELECT 1 FROM migration WHERE name = :name;

-- name: record_migration
INSERT INTO migration (name, applied) VALUES (:name, :applied);

-- name: search_language
-- The language the search rows are stemmed in (none: they are to be made).
SELECT language FROM search_language;

-- name: clear_search
DELETE FROM search;

-- name: clear_search_terms
-- The postings and the terms of every thread (the index made again).
DELETE FROM search_term;

-- name: clear_search_words
DELETE FROM search_word;

-- name: clear_search_language
DELETE FROM search_language;

-- name: record_search_language
INSERT INTO search_language (language) VALUES (:language);

-- name: indexed_threads
-- Every thread with messages, for indexing the store again.
SELECT DISTINCT thread FROM message;

-- name: insert_search
-- A row of the index, its postings not yet written (`post_search`): its words wait beside it.
INSERT INTO search (thread, agent, line, level, idx, message, since, at, length)
VALUES (:thread, :agent, :line, :level, :idx, :message, :since, :at, :length);

-- name: insert_search_pending
INSERT INTO search_pending (thread, agent, line, level, idx, words)
VALUES (:thread, :agent, :line, :level, :idx, :words);

-- name: unposted
-- How many of the thread's messages wait for their postings (their words in `search_pending`),
-- and how many terms they hold, the lines that wait with them left out.
SELECT count(*) AS count, coalesce(sum(s.length), 0) AS terms
FROM search_pending AS p
JOIN search AS s ON s.thread = p.thread AND s.agent = p.agent AND s.line = p.line
    AND s.level = p.level AND s.idx = p.idx
WHERE p.thread = :thread AND NOT p.line;

-- name: post_words
-- The terms of the thread's unposted rows that it has not numbered yet (`search_word`). A row's
-- words (` a  b `) as a JSON array of its terms (`["a","b"]`): terms are letters and digits, so
-- none needs escaping.
INSERT INTO search_word (thread, agent, stem)
SELECT DISTINCT s.thread, s.agent, k.value
FROM search_pending AS s, json_each('["' || replace(trim(s.words), '  ', '","') || '"]') AS k
WHERE s.thread = :thread AND k.value <> ''
ON CONFLICT DO NOTHING;

-- name: post_search
-- The postings of the thread's unposted rows, by their terms' numbers, in the order of
-- `search_term`'s key.
INSERT INTO search_term (word, line, level, idx, n)
SELECT w.id, s.line, s.level, s.idx, count(*)
FROM search_pending AS s, json_each('["' || replace(trim(s.words), '  ', '","') || '"]') AS k
CROSS JOIN search_word AS w ON w.thread = s.thread AND w.agent = s.agent AND w.stem = k.value
WHERE s.thread = :thread AND k.value <> ''
GROUP BY w.id, s.line, s.level, s.idx ORDER BY w.id, s.line, s.level, s.idx;

-- name: unpend
-- Posted rows keep no words: their postings hold them.
DELETE FROM search_pending WHERE thread = :thread;

-- name: insert_message
-- Store a message with its thread's next seq, and its next idx when shared or its agent's next
-- step index when a step: nothing back for a known id. Each max() is a subquery of its own, read
-- from the end of an index on (thread, seq), (thread, idx) and (thread, author, sidx): one SELECT
-- with several would walk the whole thread.
INSERT INTO message (id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx, native)
VALUES (
    :id, :thread, coalesce((SELECT max(seq) FROM message WHERE thread = :thread), -1) + 1,
    CASE WHEN :step THEN NULL
         ELSE coalesce((SELECT max(idx) FROM message WHERE thread = :thread), -1) + 1 END,
    :author, :to, :text, :at, :step, :files, :weight,
    CASE WHEN :step THEN coalesce((SELECT max(sidx) FROM message
                                   WHERE thread = :thread AND author = :author), -1) + 1 END,
    :native
)
ON CONFLICT (id) DO NOTHING
RETURNING seq, idx, sidx;

-- name: insert_loaded_message
-- A message loaded from elsewhere, in its place: its seq, index and weight, and its provider's
-- form when it has one.
INSERT INTO message (id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx,
                     native)
VALUES (:id, :thread, :seq, :idx, :author, :to, :text, :at, :step, :files, :weight, :sidx,
        :native);

-- name: message
-- A message by its id.
SELECT id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx
FROM message WHERE id = :id;

-- name: any_message
-- Whether a thread has messages (an outline row lost to a crash is made again).
SELECT 1 FROM message WHERE thread = :thread LIMIT 1;

-- name: outline
-- A thread's outline with its tail (its messages from `tail_start` to `position`) as JSON: one
-- statement, so one snapshot and one round trip. The tail is read from the (thread, seq) key.
SELECT thread, epoch, lines, bytes, boundary, since, cut_at, gone, tail_start, tokens, draining,
       position, version, floor, steps,
       (SELECT coalesce(json_group_array(json_array(id, weight, at, step, seq)), '[]')
        FROM message
        WHERE message.thread = outline.thread AND seq >= tail_start AND seq <= position) AS tail
FROM outline WHERE thread = :thread;

-- name: lock_outline
-- A load holds the outline row (PostgreSQL) until it commits: a commit in flight is waited for.
SELECT 1 FROM outline WHERE thread = :thread;

-- name: new_outline
-- A thread's outline row, made with its first message.
INSERT INTO outline (thread, epoch, lines, bytes, boundary, since, cut_at, gone, tail_start,
                     tokens, draining, position, version, floor, steps)
VALUES (:thread, :epoch, :lines, :bytes, :boundary, :since, :cut_at, :gone, :tail_start,
        :tokens, :draining, :position, :version, :floor, :steps)
ON CONFLICT (thread) DO NOTHING;

-- name: update_outline
-- A commit: the outline moves on if it is still the version the batch started from (lines and
-- steps are null when they did not change). On PostgreSQL the UPDATE locks the row, so a
-- concurrent commit of the thread waits, then finds the version moved and matches nothing.
UPDATE outline
SET bytes = :bytes, boundary = :boundary, since = :since, cut_at = :cut_at, gone = :gone,
    tail_start = :tail_start, tokens = :tokens, draining = :draining, position = :position,
    floor = :floor, lines = coalesce(:lines, lines), steps = coalesce(:steps, steps),
    version = version + 1
WHERE thread = :thread AND epoch = :epoch AND version = :version;

-- name: replace_outline
-- A loaded outline in place of the stored one.
UPDATE outline
SET bytes = :bytes, boundary = :boundary, since = :since, cut_at = :cut_at, gone = :gone,
    tail_start = :tail_start, tokens = :tokens, draining = :draining, position = :position,
    floor = :floor, lines = :lines, steps = :steps, version = version + 1
WHERE thread = :thread;

-- name: messages_after
-- The thread's messages after a seq, in order, a page at a time.
SELECT id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx
FROM message WHERE thread = :thread AND seq > :after ORDER BY seq LIMIT :limit;

-- name: messages
SELECT id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx
FROM message WHERE thread = :thread AND seq >= :first AND seq <= :last ORDER BY seq;

-- name: thread_messages
SELECT id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx
FROM message WHERE thread = :thread ORDER BY seq;

-- name: processed_messages
-- A thread's messages that its outline has processed, in seq order: those search indexes.
SELECT m.id, m.thread, m.seq, m.idx, m.author, m."to", m.text, m.at, m.step, m.files, m.weight,
       m.sidx
FROM message AS m JOIN outline AS o ON o.thread = m.thread
WHERE m.thread = :thread AND m.seq <= o.position ORDER BY m.seq;

-- name: natives
-- The provider's forms of the thread's messages from the tail on (the view sends them); in seq
-- order, so that PostgreSQL reads the range of (thread, seq), not the thread by (thread, idx).
SELECT id, native FROM message
WHERE thread = :thread AND seq > :after AND native IS NOT NULL ORDER BY seq;

-- name: tail
-- What a view sends whole (`Store.snapshot`): the thread's messages from the tail's first on,
-- processed or not, with their provider's forms, in seq order: a range of the (thread, seq) key.
SELECT id, thread, seq, idx, author, "to", text, at, step, files, weight, sidx, native
FROM message WHERE thread = :thread AND seq >= :first ORDER BY seq;

-- name: summary
-- A node by its key (agent '': the shared tree).
SELECT thread, level, idx, text, bytes, message, at, agent, fallback FROM summary
WHERE thread = :thread AND agent = :agent AND level = :level AND idx = :index;

-- name: nodes
-- An outline's nodes: a JSON list of [level, idx] keys, each node looked up by its key.
SELECT s.thread, s.level, s.idx, s.text, s.bytes, s.message, s.at, s.agent, s.fallback
FROM json_each(:keys) AS k CROSS JOIN summary AS s
ON s.thread = :thread AND s.agent = :agent AND s.level = json_extract(k.value, '$[0]')
   AND s.idx = json_extract(k.value, '$[1]');

-- name: summaries
-- A thread's nodes by agent ('' first), level and index.
SELECT thread, level, idx, text, bytes, message, at, agent, fallback FROM summary
WHERE thread = :thread ORDER BY agent, level, idx;

-- name: all_summaries
SELECT thread, level, idx, text, bytes, message, at, agent, fallback FROM summary
ORDER BY thread, agent, level, idx;

-- name: insert_summary
INSERT INTO summary (thread, level, idx, text, bytes, message, at, agent, fallback)
VALUES (:thread, :level, :idx, :text, :bytes, :message, :at, :agent, :fallback);

-- name: first_at
-- The `at` of shared messages by index: the first message of each line being indexed.
SELECT idx, at FROM message
WHERE thread = :thread AND NOT step AND idx IN (SELECT value FROM json_each(:indexes));

-- name: next_call
-- The thread's next call number, read from the end of the (thread, n) index.
SELECT coalesce(max(n), -1) + 1 AS n FROM call WHERE thread = :thread;

-- name: insert_call_model
-- A model key that calls are recorded under, kept once (`call_packed.sql`).
INSERT INTO call_model (key, model) VALUES (:model_key, :model) ON CONFLICT (key) DO NOTHING;

-- name: insert_call
-- Record a call, its prompts, answers and line packed (`call_packed.sql`). A pin keeps its
-- first answers, but a fallback (an ask that kept failing) gives way to the answers of the same
-- request asked again, so a replay then gives the answered line.
INSERT INTO call (thread, key, n, model, level, idx, prompts, answers, line, outcome,
                  input_tokens, output_tokens, agent, packed, model_key)
VALUES (:thread, :key, :n, '', :level, :idx, '', '', '', :outcome,
        :input_tokens, :output_tokens, :agent, :packed, :model_key)
ON CONFLICT (thread, key) DO UPDATE SET
    answers = excluded.answers, line = excluded.line, outcome = excluded.outcome,
    input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
    packed = excluded.packed
WHERE call.outcome = 'fallback' AND excluded.outcome <> 'fallback';

-- name: calls
-- A thread's calls, each with its model key (kept once, or in the row as before `call_packed`).
SELECT c.thread, c.key, c.n, coalesce(m.model, c.model) AS model, c.level, c.idx, c.prompts,
       c.answers, c.line, c.outcome, c.input_tokens, c.output_tokens, c.agent, c.packed
FROM call AS c LEFT JOIN call_model AS m ON m.key = c.model_key
WHERE c.thread = :thread ORDER BY c.n;

-- name: all_calls
SELECT c.thread, c.key, c.n, coalesce(m.model, c.model) AS model, c.level, c.idx, c.prompts,
       c.answers, c.line, c.outcome, c.input_tokens, c.output_tokens, c.agent, c.packed
FROM call AS c LEFT JOIN call_model AS m ON m.key = c.model_key
ORDER BY c.thread, c.n;

-- name: tally
-- A thread's recorded calls counted per model (`stats`, `usage`): counts, not the calls.
SELECT c.thread, coalesce(m.model, c.model) AS model, count(*) AS calls,
       sum(c.input_tokens) AS input_tokens, sum(c.output_tokens) AS output_tokens
FROM call AS c LEFT JOIN call_model AS m ON m.key = c.model_key
WHERE c.thread = :thread GROUP BY c.thread, coalesce(m.model, c.model);

-- name: all_tally
SELECT c.thread, coalesce(m.model, c.model) AS model, count(*) AS calls,
       sum(c.input_tokens) AS input_tokens, sum(c.output_tokens) AS output_tokens
FROM call AS c LEFT JOIN call_model AS m ON m.key = c.model_key
GROUP BY c.thread, coalesce(m.model, c.model);

-- name: fallback_lines
-- A thread's lines that read as a cut written while the summarizer failed, steps' trees too,
-- each as its newest generation reads (a line asked again is one no more).
SELECT s.thread, count(*) AS lines FROM summary AS s
WHERE s.thread = :thread
    AND coalesce((SELECT g.fallback FROM generation AS g
                  WHERE g.thread = s.thread AND g.agent = s.agent AND g.level = s.level
                      AND g.idx = s.idx
                  ORDER BY g.generation DESC LIMIT 1), s.fallback) <> 0
GROUP BY s.thread;

-- name: all_fallback_lines
SELECT s.thread, count(*) AS lines FROM summary AS s
WHERE coalesce((SELECT g.fallback FROM generation AS g
                WHERE g.thread = s.thread AND g.agent = s.agent AND g.level = s.level
                    AND g.idx = s.idx
                ORDER BY g.generation DESC LIMIT 1), s.fallback) <> 0
GROUP BY s.thread;

-- name: erase_outline
-- An erase deletes the outline first: on PostgreSQL its row lock waits for a commit in flight,
-- and the later deletes (each a new snapshot) then see that commit's summaries and calls.
DELETE FROM outline WHERE thread = :thread;

-- name: erase_messages
DELETE FROM message WHERE thread = :thread;

-- name: erase_summaries
DELETE FROM summary WHERE thread = :thread;

-- name: erase_calls
DELETE FROM call WHERE thread = :thread;

-- name: erase_search_terms
-- The thread's postings, by its terms' numbers, then its terms, then its rows.
DELETE FROM search_term WHERE word IN (SELECT id FROM search_word WHERE thread = :thread);

-- name: erase_search_words
DELETE FROM search_word WHERE thread = :thread;

-- name: erase_search
DELETE FROM search WHERE thread = :thread;

-- name: erase_about
DELETE FROM thread WHERE thread = :thread;

-- name: clear_line_terms
-- A load replacing a thread's tree: the postings of its lines go, then their rows.
DELETE FROM search_term
WHERE line AND word IN (SELECT id FROM search_word WHERE thread = :thread);

-- name: clear_lines
-- A load replacing a thread's tree: its summaries and their search rows go.
DELETE FROM search WHERE thread = :thread AND line;

-- name: threads
-- Every thread with stored messages, sorted.
SELECT DISTINCT thread FROM message ORDER BY thread;

-- name: behind
-- Threads with stored messages not yet processed.
SELECT DISTINCT m.thread FROM message m
LEFT JOIN outline o ON o.thread = m.thread
WHERE o.thread IS NULL OR m.seq > o.position ORDER BY m.thread;

-- name: about
SELECT thread, title, settings, space FROM thread WHERE thread = :thread;

-- name: all_about
SELECT thread, title, settings, space FROM thread ORDER BY thread;

-- name: describe
-- Give a thread its title, or record its settings: a null leaves the stored value as it is.
INSERT INTO thread (thread, title, settings) VALUES (:thread, :title, :settings)
ON CONFLICT (thread) DO UPDATE
SET title = coalesce(excluded.title, thread.title),
    settings = coalesce(excluded.settings, thread.settings);

-- name: set_space
-- Put a thread in a space: the one given replaces the one recorded.
INSERT INTO thread (thread, space) VALUES (:thread, :space)
ON CONFLICT (thread) DO UPDATE SET space = excluded.space;

-- name: foreign_ids
-- The given message ids that the store holds in another thread, with that thread.
SELECT id, thread FROM message
WHERE thread <> :thread AND id IN (SELECT value FROM json_each(:ids));

-- name: search_postings
-- Search: the postings of one agent's terms (a JSON list) in the thread, each term's number read
-- from `search_word` and its postings a range of `search_term`'s key, with the length and `at`
-- of their rows from `search`'s key.
SELECT w.stem AS term, t.line, t.level, t.idx, t.n, s.length, s.at
FROM json_each(:terms) AS k
CROSS JOIN search_word AS w ON w.thread = :thread AND w.agent = :agent AND w.stem = k.value
CROSS JOIN search_term AS t ON t.word = w.id
CROSS JOIN search AS s ON s.thread = :thread AND s.agent = :agent
    AND s.line = t.line AND s.level = t.level AND s.idx = t.idx;

-- name: search_unposted
-- Search: the words of one agent's rows whose postings are not written yet, with their length
-- and `at` (those of a batch of messages at most, `history.store._search.indexing.due`, and of
-- the lines written with them).
SELECT s.line, s.level, s.idx, p.words, s.length, s.at
FROM search_pending AS p
JOIN search AS s ON s.thread = p.thread AND s.agent = p.agent AND s.line = p.line
    AND s.level = p.level AND s.idx = p.idx
WHERE p.thread = :thread AND p.agent = :agent;

-- name: search_frequencies
-- Search: how many postings each of one agent's terms (a JSON list) has in the thread, messages
-- and lines apart, counted in the primary key alone up to `:cap + 1`; where there are more than
-- `:cap`, `last` is the key of the one after the `:cap`th in the key's order
-- (`level * 2^32 + idx`), from which ranking estimates how many there are. A term the thread
-- does not hold is left out.
SELECT w.stem AS term, l.value AS line,
       (SELECT count(*) FROM (SELECT 1 FROM search_term
                              WHERE word = w.id AND line = l.value LIMIT :cap + 1)) AS count,
       (SELECT level * 4294967296 + idx FROM search_term WHERE word = w.id AND line = l.value
        ORDER BY level, idx LIMIT 1 OFFSET :cap) AS last
FROM json_each(:terms) AS k
CROSS JOIN search_word AS w ON w.thread = :thread AND w.agent = :agent AND w.stem = k.value
CROSS JOIN json_each('[0, 1]') AS l;

-- name: search_newest
-- Search: the newest `:cap` postings of one agent's term among messages or lines (lines from the
-- highest level down), backwards along the primary key, with their rows' length and `at`.
SELECT w.stem AS term, t.line, t.level, t.idx, t.n, s.length, s.at
FROM search_word AS w
CROSS JOIN search_term AS t ON t.word = w.id AND t.line = :line
CROSS JOIN search AS s ON s.thread = :thread AND s.agent = :agent
    AND s.line = t.line AND s.level = t.level AND s.idx = t.idx
WHERE w.thread = :thread AND w.agent = :agent AND w.stem = :term
ORDER BY t.level DESC, t.idx DESC LIMIT :cap;

-- name: search_together
-- Search: one agent's messages that hold two or more of its terms (a JSON list), among each
-- term's newest `:cap` postings, newest first, up to `:limit`: the candidates a query of common
-- terms finds by holding them together, however old. Each term reads a range of `search_term`'s
-- key from its `:cap`th newest posting on, so the read is bounded.
SELECT t.idx FROM json_each(:terms) AS k
CROSS JOIN search_word AS w ON w.thread = :thread AND w.agent = :agent AND w.stem = k.value
CROSS JOIN search_term AS t ON t.word = w.id AND t.line = 0 AND t.level = 0
    AND t.idx >= coalesce((SELECT idx FROM search_term WHERE word = w.id AND line = 0
                           AND level = 0 ORDER BY idx DESC LIMIT 1 OFFSET :cap - 1), 0)
GROUP BY t.idx HAVING count(*) >= 2
ORDER BY t.idx DESC LIMIT :limit;

-- name: search_held
-- Search: how often one agent's rows hold its terms, by key (a JSON list of [term, line,
-- level, idx]; a row that does not hold its term is left out).
SELECT w.stem AS term, t.line, t.level, t.idx, t.n
FROM json_each(:keys) AS k
CROSS JOIN search_word AS w ON w.thread = :thread AND w.agent = :agent
    AND w.stem = json_extract(k.value, '$[0]')
CROSS JOIN search_term AS t ON t.word = w.id AND t.line = json_extract(k.value, '$[1]')
   AND t.level = json_extract(k.value, '$[2]') AND t.idx = json_extract(k.value, '$[3]');

-- name: search_places
-- Search: the length and `at` of one agent's messages by index (a JSON list), from `search`'s
-- key: the neighbours that windows weigh.
SELECT s.idx, s.length, s.at FROM json_each(:indexes) AS k
CROSS JOIN search AS s ON s.thread = :thread AND s.agent = :agent
    AND s.line = 0 AND s.level = 0 AND s.idx = k.value;

-- name: search_corpora
-- Search: how many rows and terms the thread holds of one agent ('': the shared rows),
-- messages and lines apart, as the triggers keep them.
SELECT line, count, terms FROM search_corpus WHERE thread = :thread AND agent = :agent
ORDER BY line;

-- name: search_details
-- Search: what the listed results show, by their keys (a JSON list of [agent, line, level,
-- idx]): a line's text from its summary, a message's parts (its line is made of them).
SELECT s.agent, s.line, s.level, s.idx, s.message, s.since, n.text AS summary, m.author,
       m."to" AS addressee, m.text, m.at, m.files
FROM json_each(:keys) AS k CROSS JOIN search AS s
ON s.thread = :thread AND s.agent = json_extract(k.value, '$[0]')
   AND s.line = json_extract(k.value, '$[1]')
   AND s.level = json_extract(k.value, '$[2]') AND s.idx = json_extract(k.value, '$[3]')
LEFT JOIN summary AS n ON s.line AND n.thread = s.thread AND n.agent = s.agent
    AND n.level = s.level AND n.idx = s.idx
LEFT JOIN message AS m ON NOT s.line AND m.id = s.message;

-- name: insert_move
INSERT INTO move (thread, seq, cut, folded, from_boundary, boundary, lines, bytes, tail_start,
                  tokens)
VALUES (:thread, :seq, :cut, :folded, :from_boundary, :boundary, :lines, :bytes, :tail_start,
        :tokens)
ON CONFLICT (thread, seq) DO NOTHING;

-- name: moves
SELECT seq, cut, folded, from_boundary, boundary, lines, bytes, tail_start, tokens
FROM move WHERE thread = :thread ORDER BY seq;

-- name: erase_moves
DELETE FROM move WHERE thread = :thread;

-- name: lease
-- A thread's lease, whoever holds it (`claims.py`).
SELECT owner, wanted FROM lease WHERE thread = :thread;

-- name: take_lease
-- The lease for `owner`, unless another holds one that has not lapsed: one row changed when
-- taken. The clock is the database's (seconds since 1970).
INSERT INTO lease (thread, owner, expires, wanted)
VALUES (:thread, :owner, (julianday('now') - 2440587.5) * 86400.0 + :seconds, 0)
ON CONFLICT (thread) DO UPDATE SET owner = excluded.owner, expires = excluded.expires, wanted = 0
WHERE lease.owner = excluded.owner OR lease.expires < (julianday('now') - 2440587.5) * 86400.0;

-- name: renew_lease
-- One row changed while `owner` still holds the lease (lapsed or not, nobody took it over).
UPDATE lease SET expires = (julianday('now') - 2440587.5) * 86400.0 + :seconds WHERE thread = :thread AND owner = :owner;

-- name: want_lease
UPDATE lease SET wanted = 1 WHERE thread = :thread;

-- name: release_lease
UPDATE lease SET expires = 0, wanted = 0 WHERE thread = :thread AND owner = :owner;

-- name: release_leases
-- Every lease of a store that closes.
UPDATE lease SET expires = 0 WHERE owner = :owner;

-- name: weights
SELECT seq, weight FROM message WHERE thread = :thread AND seq <= :last ORDER BY seq;

-- name: newest_seq
-- The seq of the thread's newest message, read from the end of the (thread, seq) key.
SELECT max(seq) AS seq FROM message WHERE thread = :thread;

-- name: unpost
-- A row's postings, by the stems of the text it was indexed from (a JSON list): a row taken
-- back or indexed again keeps no words to find them by, and a posting has no thread.
DELETE FROM search_term
WHERE line = :line AND level = :level AND idx = :idx AND word IN (
    SELECT w.id FROM json_each(:stems) AS k
    CROSS JOIN search_word AS w ON w.thread = :thread AND w.agent = :agent AND w.stem = k.value);

-- name: line_texts
-- Every text some lines have had (a JSON list of [agent, level, idx]), their summary's and
-- each generation's, with their search rows' days: their postings hold the stems of one.
SELECT s.agent, s.level, s.idx, s.since, s.at, n.text
FROM json_each(:keys) AS k
CROSS JOIN search AS s ON s.thread = :thread AND s.agent = json_extract(k.value, '$[0]')
    AND s.line = 1 AND s.level = json_extract(k.value, '$[1]')
    AND s.idx = json_extract(k.value, '$[2]')
CROSS JOIN summary AS n ON n.thread = :thread AND n.agent = s.agent AND n.level = s.level
    AND n.idx = s.idx
UNION ALL
SELECT s.agent, s.level, s.idx, s.since, s.at, g.text
FROM json_each(:keys) AS k
CROSS JOIN search AS s ON s.thread = :thread AND s.agent = json_extract(k.value, '$[0]')
    AND s.line = 1 AND s.level = json_extract(k.value, '$[1]')
    AND s.idx = json_extract(k.value, '$[2]')
CROSS JOIN generation AS g ON g.thread = :thread AND g.agent = s.agent AND g.level = s.level
    AND g.idx = s.idx;

-- name: retract_search
-- Taking back a message: its search row (its postings first, `unpost`).
DELETE FROM search
WHERE thread = :thread AND agent = :agent AND NOT line AND level = 0 AND idx = :idx;

-- name: retract_messages
-- Taking back the thread's newest messages, from seq `:first` on.
DELETE FROM message WHERE thread = :thread AND seq >= :first;

-- name: names
-- The display names: store-wide (thread '') and each thread's.
SELECT thread, author, name FROM author_name ORDER BY thread, author;

-- name: thread_names
-- The names that apply in a thread: store-wide ones (thread '') and its own.
SELECT thread, author, name FROM author_name WHERE thread = '' OR thread = :thread;

-- name: set_name
INSERT INTO author_name (thread, author, name) VALUES (:thread, :author, :name)
ON CONFLICT (thread, author) DO UPDATE SET name = excluded.name;

-- name: authors
-- Who a thread's messages are by or to (an empty `to` is nobody).
SELECT author AS who FROM message WHERE thread = :thread
UNION SELECT "to" AS who FROM message WHERE thread = :thread AND "to" <> '';

-- name: author_threads
-- The threads where someone is an author or is written to.
SELECT DISTINCT thread FROM message WHERE author = :author OR "to" = :author;

-- name: generations
-- A node's generations after its first, by node and number.
SELECT thread, agent, level, idx, generation, text, bytes, form, fallback, made FROM generation
WHERE thread = :thread ORDER BY agent, level, idx, generation;

-- name: insert_generation
INSERT INTO generation (thread, agent, level, idx, generation, text, bytes, form, fallback, made)
VALUES (:thread, :agent, :level, :idx, :generation, :text, :bytes, :form, :fallback, :made);

-- name: generation_shown
SELECT made, shown FROM generation_shown WHERE thread = :thread;

-- name: set_generation_shown
INSERT INTO generation_shown (thread, made, shown) VALUES (:thread, :made, :shown)
ON CONFLICT (thread) DO UPDATE SET made = excluded.made, shown = excluded.shown;

-- name: show_generations
-- A cut or a fold: the outline an agent is sent takes every change made so far.
UPDATE generation_shown SET shown = made WHERE thread = :thread AND shown <> made;

-- name: bump_outline
-- A change to a thread's lines commits only if its outline is still the one it was made from.
UPDATE outline SET version = version + 1
WHERE thread = :thread AND epoch = :epoch AND version = :version;

-- name: unindex_line
-- A line's search row, before it is indexed again with its new text (its postings first,
-- `unpost`).
DELETE FROM search
WHERE thread = :thread AND agent = :agent AND line AND level = :level AND idx = :idx;

-- name: erase_generations
DELETE FROM generation WHERE thread = :thread;

-- name: erase_generation_shown
DELETE FROM generation_shown WHERE thread = :thread;

-- name: erase_names
DELETE FROM author_name WHERE thread = :thread;

-- name: all_authors
-- Who any message is by or to.
SELECT author AS who FROM message UNION SELECT "to" AS who FROM message WHERE "to" <> '';

-- name: node_generations
-- The newest generation made by change :upto of some nodes of one tree (a JSON list of
-- [level, idx] keys), for those that have one.
SELECT g.thread, g.agent, g.level, g.idx, g.generation, g.text, g.bytes, g.form, g.fallback,
       g.made
FROM json_each(:keys) AS k CROSS JOIN generation AS g
ON g.thread = :thread AND g.agent = :agent AND g.level = json_extract(k.value, '$[0]')
   AND g.idx = json_extract(k.value, '$[1]')
WHERE g.made <= :upto AND NOT EXISTS (
    SELECT 1 FROM generation AS h
    WHERE h.thread = g.thread AND h.agent = g.agent AND h.level = g.level AND h.idx = g.idx
      AND h.generation > g.generation AND h.made <= :upto);
