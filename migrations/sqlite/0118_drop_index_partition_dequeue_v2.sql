-- Superseded by idx_workflow_status_partition_dequeue_v3.
DROP INDEX IF EXISTS "idx_workflow_status_partition_dequeue_v2";
