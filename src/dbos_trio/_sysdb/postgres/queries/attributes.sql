-- The PostgreSQL backend's statements for workflow attributes (workflow_status.attributes).
-- (Conventions: see management.sql.)

-- name: update_workflow_attributes
-- Replace the attributes (NULL clears them) or, with merge, add the given top-level keys
-- to the stored object (JSONB ||: a given key replaces the stored one), atomically in one
-- statement. A stored value that is not an object counts as an empty one. No row back:
-- there is no such workflow.
UPDATE {schema}.workflow_status
SET attributes = CASE
        WHEN %(merge)s THEN
            (CASE WHEN jsonb_typeof(attributes) = 'object' THEN attributes ELSE '{}'::jsonb END)
            || %(attributes)s::jsonb
        ELSE %(attributes)s::jsonb
    END,
    updated_at = %(now)s
WHERE workflow_uuid = %(workflow_id)s
RETURNING workflow_uuid
