-- User-defined workflow attributes as JSONB, with a GIN index for containment (@>) filters
-- over the rows that have any. No default and no matching rows yet, so nothing runs online.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN IF NOT EXISTS attributes JSONB;

CREATE INDEX IF NOT EXISTS idx_workflow_status_attributes
    ON {{schema}}.workflow_status USING GIN (attributes)
    WHERE attributes IS NOT NULL;
