-- online
-- The first partition-dequeue index is superseded by its v2 (46).

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_partition_dequeue;
