-- The size of each thread's corpus (PostgreSQL; `search_corpus.sql` is SQLite's): how many rows
-- of `search` each thread holds for each agent ('': the shared rows), messages and lines apart,
-- and how many terms they hold in all, kept by the triggers as rows come and go. A search read
-- them by counting the thread's rows in `search_place`, which took as long as the thread.
CREATE TABLE search_corpus (
    thread TEXT NOT NULL,
    agent TEXT NOT NULL,
    line BOOLEAN NOT NULL,
    count BIGINT NOT NULL,
    terms BIGINT NOT NULL,
    PRIMARY KEY (thread, agent, line)
);
INSERT INTO search_corpus (thread, agent, line, count, terms)
SELECT thread, agent, line, count(*), sum(length) FROM search GROUP BY thread, agent, line;
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
