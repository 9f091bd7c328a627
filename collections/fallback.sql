-- SPEC version 3: a line whose text is a fallback (the `cut` of its input, written because the
-- summarizer was down or the same ask failed 5 times): 1, else 0. Asked again once it answers.
ALTER TABLE summary ADD COLUMN fallback INTEGER NOT NULL DEFAULT 0;
