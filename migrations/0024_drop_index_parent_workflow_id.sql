-- online
-- Drop the full parent_workflow_id index (most workflows are not children); migration 25
-- rebuilds it as a partial index.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_parent_workflow_id;
