-- The partial unique index of version 24 replaces the full one of version 1.
DROP INDEX IF EXISTS "uq_workflow_status_queue_name_dedup_id";
