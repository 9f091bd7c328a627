-- A lease on each thread a process processes (`history/store/_claims.py`): one process at a time
-- processes a thread, across processes on one SQLite file as on one PostgreSQL schema. `expires`
-- is in seconds since 1970 by the database's clock; a lease given up has 0, and one that lapsed
-- (its process stopped or died) is taken over by the next claim. `wanted`: another process
-- asked for the thread while this one held it, and left its messages to it.
CREATE TABLE lease (
    thread TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    wanted INTEGER NOT NULL DEFAULT 0
);
