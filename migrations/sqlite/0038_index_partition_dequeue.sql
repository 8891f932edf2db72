-- Dequeue from one partition of a partitioned queue.
-- (PostgreSQL's versions 43-44 drop NOTIFY triggers; SQLite never had them.)
CREATE INDEX IF NOT EXISTS "idx_workflow_status_partition_dequeue" ON "workflow_status" ("queue_name", "status", "queue_partition_key", "priority", "created_at") WHERE "status" IN ('ENQUEUED', 'PENDING') AND "queue_partition_key" IS NOT NULL;
