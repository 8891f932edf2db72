-- Record when a workflow reached its final status. The column has no default and the new
-- partial index covers no existing row, so neither needs to run online.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN IF NOT EXISTS completed_at BIGINT;

CREATE INDEX IF NOT EXISTS idx_workflow_status_completed_at
    ON {{schema}}.workflow_status (completed_at)
    WHERE completed_at IS NOT NULL;
