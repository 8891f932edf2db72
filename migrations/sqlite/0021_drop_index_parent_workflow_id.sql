-- Rebuild the parent_workflow_id index as a partial one (most rows have no parent): drop it.
DROP INDEX IF EXISTS "idx_workflow_status_parent_workflow_id";
