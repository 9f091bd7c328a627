-- A term's postings packed 64 indexes to a row: a row per posting cost about 60 bytes of heap
-- and 77 of index on PostgreSQL (its row header alone is 24), 24 times the text indexed. A row
-- now holds the postings of one term among one level's rows `bucket * 64` to `bucket * 64 + 63`:
-- each one's offset in the bucket (`idxs`, ascending) and how often it holds the term (`ns`,
-- beside it). Buckets never overlap, so a read in the key's order reads whole rows in order.
ALTER TABLE search_term RENAME TO search_term_unpacked;
ALTER INDEX search_term_pkey RENAME TO search_term_unpacked_pkey;
CREATE TABLE search_term (
    word BIGINT NOT NULL,
    line BOOLEAN NOT NULL,
    level INTEGER NOT NULL,
    bucket BIGINT NOT NULL,
    idxs SMALLINT[] NOT NULL,
    ns INTEGER[] NOT NULL,
    PRIMARY KEY (word, line, level, bucket)
);
INSERT INTO search_term (word, line, level, bucket, idxs, ns)
SELECT word, line, level, idx / 64, array_agg((idx % 64)::smallint ORDER BY idx),
       array_agg(n ORDER BY idx)
FROM search_term_unpacked
GROUP BY word, line, level, idx / 64;
DROP TABLE search_term_unpacked;
