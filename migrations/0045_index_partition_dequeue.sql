-- online
-- Dequeue from one partition of a partitioned queue without scanning its other partitions.
-- (Superseded by 46 and dropped by 47.)

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_partition_dequeue
    ON {{schema}}.workflow_status (queue_name, status, queue_partition_key, priority, created_at)
    WHERE status IN ('ENQUEUED', 'PENDING') AND queue_partition_key IS NOT NULL;
