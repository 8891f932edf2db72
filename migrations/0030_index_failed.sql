-- online
-- Listing failed workflows (errors, cancellations, dead-lettered) by time, without scanning
-- the successful majority.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_failed
    ON {{schema}}.workflow_status (status, created_at)
    WHERE status IN ('ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED');
