-- Indexes for the statements that run with every message, so that none of them costs more in a
-- long thread than in a short one (`history/store/_queries.py` lists those statements).
-- A thread's next call number is max(n) of its calls: read from the end of this index.
CREATE INDEX call_thread_n ON call (thread, n);
