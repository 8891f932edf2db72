-- online
-- The dequeue index again, now carrying application_name as an INCLUDE column so counts
-- scoped to an application are index-only. (Included rather than a key column: the planner
-- cannot OR two ranges of a key column together here.)

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_in_flight_v2
    ON {{schema}}.workflow_status (queue_name, status, priority, created_at)
    INCLUDE (application_name)
    WHERE status IN ('ENQUEUED', 'PENDING');
