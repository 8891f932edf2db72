-- online
-- The dequeue index: only queued and running rows, in the order dequeue takes them.
-- (Migrations 115/116 replace it with a covering version.)

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_in_flight
    ON {{schema}}.workflow_status (queue_name, status, priority, created_at)
    WHERE status IN ('ENQUEUED', 'PENDING');
