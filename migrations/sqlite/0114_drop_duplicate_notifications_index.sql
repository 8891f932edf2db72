-- idx_notifications duplicates idx_workflow_topic.
DROP INDEX IF EXISTS "idx_notifications";
