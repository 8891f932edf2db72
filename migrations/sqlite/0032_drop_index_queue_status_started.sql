-- Superseded by the rate-limited index of version 31.
DROP INDEX IF EXISTS "idx_workflow_status_queue_status_started";
