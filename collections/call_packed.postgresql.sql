-- Recorded calls kept compact (PostgreSQL; `call_packed.sql` is SQLite's and says why): a
-- call's prompts, answers and line as one zlib-compressed JSON array, its model key kept once.
ALTER TABLE call ADD COLUMN packed BYTEA;
ALTER TABLE call ADD COLUMN model_key TEXT;
CREATE TABLE call_model (key TEXT PRIMARY KEY, model TEXT NOT NULL);
