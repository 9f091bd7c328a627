-- What a provider needs to continue from an agent's own message (its reasoning, thinking
-- signatures, item and call ids): pydantic-ai's serialized message, null for everyone else's.
ALTER TABLE message ADD COLUMN native TEXT;
