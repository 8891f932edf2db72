-- Rate-limit lookups by queue, status and start time (dropped again in version 32).
CREATE INDEX "idx_workflow_status_queue_status_started"
ON "workflow_status" ("queue_name", "status", "started_at_epoch_ms");
