-- online
-- Superseded by idx_workflow_status_partition_dequeue_v3 (117).

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_partition_dequeue_v2;
