-- Superseded by version 39. This is the last of SQLite's own history: 41-99 are padding.
DROP INDEX IF EXISTS "idx_workflow_status_partition_dequeue";
