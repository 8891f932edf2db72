-- online
-- Index only child workflows: listing a workflow's children stays fast, the index small.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_parent_workflow_id
    ON {{schema}}.workflow_status (parent_workflow_id)
    WHERE parent_workflow_id IS NOT NULL;
