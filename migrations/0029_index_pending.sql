-- online
-- Recovery looks for PENDING workflows; index just those, oldest first.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_pending
    ON {{schema}}.workflow_status (created_at)
    WHERE status = 'PENDING';
