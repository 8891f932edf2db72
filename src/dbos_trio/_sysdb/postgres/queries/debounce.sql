-- The PostgreSQL backend's statements: a bounce made from a workflow body.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style.

-- name: bounce_fence
-- Inside the bounce's transaction: whether the caller still owns its workflow (the row is
-- locked until commit, as every fenced write locks it), and the checkpoint an earlier
-- attempt may have committed at this step id before its reply was lost.
SELECT (SELECT count(*) FROM (
            SELECT 1 FROM {schema}.workflow_status
            WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
            FOR NO KEY UPDATE
        ) AS owned) > 0,
       (SELECT output FROM {schema}.operation_outputs
        WHERE workflow_uuid = %(workflow_id)s AND function_id = %(function_id)s)

-- name: record_bounce
-- The DBOS.debounce_delayed_workflow checkpoint, in the bounce's transaction.
INSERT INTO {schema}.operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, application_name
) VALUES (
    %(workflow_id)s, %(function_id)s, 'DBOS.debounce_delayed_workflow', %(output)s,
    'portable_json', %(started_at)s, %(now)s, %(application_name)s
)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
