-- Rebuild the forked_from index as a partial one (most rows are not forks): drop it.
DROP INDEX IF EXISTS "idx_workflow_status_forked_from";
