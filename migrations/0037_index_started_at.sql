-- online
-- Listing workflows by dequeue/start time, over only the rows that have started.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_started_at
    ON {{schema}}.workflow_status (started_at_epoch_ms)
    WHERE started_at_epoch_ms IS NOT NULL;
