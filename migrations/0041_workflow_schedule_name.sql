-- Remember which named schedule enqueued a workflow, and index that for "runs of schedule X".
-- No existing row has one, so the partial index is built inside the transaction.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN IF NOT EXISTS schedule_name TEXT;

CREATE INDEX IF NOT EXISTS idx_workflow_status_schedule_name
    ON {{schema}}.workflow_status (schedule_name)
    WHERE schedule_name IS NOT NULL;
