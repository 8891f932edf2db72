-- The SQLite backend's statements for workflow attributes (workflow_status.attributes, JSON
-- text). (Conventions: see lifecycle.sql.)

-- name: update_workflow_attributes
-- Replace the attributes (NULL clears them) or, with merge, add the given top-level keys
-- to the stored object, as PostgreSQL's JSONB || does: the object is rebuilt from the
-- stored keys the update does not name plus the update's keys, each value re-encoded by
-- its JSON type (json_each gives a text value unquoted and true/false as 1/0). A stored
-- value that is not an object counts as an empty one. No row back: no such workflow.
UPDATE workflow_status
SET attributes = CASE
        WHEN :attributes IS NULL THEN NULL
        WHEN NOT :merge THEN json(:attributes)
        ELSE (
            SELECT json_group_object(
                       key,
                       CASE type
                           WHEN 'true' THEN json('true')
                           WHEN 'false' THEN json('false')
                           WHEN 'null' THEN json('null')
                           WHEN 'text' THEN json(json_quote(value))
                           ELSE json(value)
                       END)
            FROM (
                SELECT key, type, value FROM json_each(
                    CASE WHEN json_valid(workflow_status.attributes)
                          AND json_type(workflow_status.attributes) = 'object'
                         THEN workflow_status.attributes ELSE '{}' END)
                WHERE key NOT IN (SELECT key FROM json_each(:attributes))
                UNION ALL
                SELECT key, type, value FROM json_each(:attributes)
            )
        )
    END,
    updated_at = :now
WHERE workflow_uuid = :workflow_id
RETURNING workflow_uuid
