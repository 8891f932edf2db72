-- online
-- The timeout sweep reads active workflows whose deadline has passed; index only active rows
-- that have a deadline.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_deadline
    ON {{schema}}.workflow_status (workflow_deadline_epoch_ms)
    WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')
      AND workflow_deadline_epoch_ms IS NOT NULL;
