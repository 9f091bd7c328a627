-- Recorded calls kept compact: a call's prompts, answers and line are one zlib-compressed JSON
-- array, `[prompts, answers, line]` (`packed`), and its model key (the summarizer's name, its
-- settings and its instructions, the same for every call of a thread) is kept once in
-- `call_model`, under a digest of it (`model_key`). A call written so leaves `prompts`,
-- `answers`, `line` and `model` empty; the rows written before stay as they are, and are read
-- as they always were. Whole, a call's prompts and answers were half of a store (each prompt
-- repeats the instructions' ruler and the lines it asks about).
ALTER TABLE call ADD COLUMN packed BLOB;
ALTER TABLE call ADD COLUMN model_key TEXT;
CREATE TABLE call_model (key TEXT PRIMARY KEY, model TEXT NOT NULL);
