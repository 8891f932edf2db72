-- Partition dequeue index v3, application_name trailing the key (no INCLUDE in SQLite).
CREATE INDEX IF NOT EXISTS "idx_workflow_status_partition_dequeue_v3" ON "workflow_status" ("queue_name", "status", "queue_partition_key", "priority", "created_at", "workflow_uuid", "application_name") WHERE "status" IN ('ENQUEUED', 'PENDING') AND "queue_partition_key" IS NOT NULL;
