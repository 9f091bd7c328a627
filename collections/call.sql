-- Every summarizer conversation, pinned under a key of its exact request, so that a replay or a
-- rebuild gets the identical answer without calling the model. Erasing a thread erases its calls.
-- n orders a thread's calls as they were made; the tokens are what the provider reported.
CREATE TABLE call (
    thread TEXT NOT NULL,
    key TEXT NOT NULL,
    n BIGINT NOT NULL,
    model TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    prompts TEXT NOT NULL,
    answers TEXT NOT NULL,
    line TEXT NOT NULL,
    outcome TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    PRIMARY KEY (thread, key)
);
