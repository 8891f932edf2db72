-- Keep the token of the insert that created a workflow row (immutable), so owner_xid can
-- carry the current owner's token and the creator can still be recognised.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN IF NOT EXISTS creator_xid TEXT DEFAULT NULL;
