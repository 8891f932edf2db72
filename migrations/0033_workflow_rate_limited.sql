-- Mark the dispatches that count against a queue's rate limiter. A constant default makes
-- this a catalog-only change, so it runs in the ordinary transaction.

ALTER TABLE {{schema}}.workflow_status
    ADD COLUMN IF NOT EXISTS rate_limited BOOLEAN NOT NULL DEFAULT FALSE;
