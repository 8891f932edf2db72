-- Link child workflows to their parent, so listing or cancelling a workflow's children is
-- an index lookup. (Migrations 24/25 rebuild the index as a partial one.)

ALTER TABLE {{schema}}.workflow_status ADD COLUMN parent_workflow_id TEXT DEFAULT NULL;

CREATE INDEX idx_workflow_status_parent_workflow_id
    ON {{schema}}.workflow_status (parent_workflow_id);
