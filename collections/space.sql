-- The space a thread belongs to: a string the app sets (a workspace, a customer, a team) that
-- metering groups the summarizer's calls by. Null until the app names one.
ALTER TABLE thread ADD COLUMN space TEXT;
