-- online
-- The partition-dequeue index, covering application_name like in_flight_v2 (115).

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_partition_dequeue_v3
    ON {{schema}}.workflow_status
       (queue_name, status, queue_partition_key, priority, created_at, workflow_uuid)
    INCLUDE (application_name)
    WHERE status IN ('ENQUEUED', 'PENDING') AND queue_partition_key IS NOT NULL;
