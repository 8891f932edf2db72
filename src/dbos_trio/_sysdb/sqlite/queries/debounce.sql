-- The SQLite backend's statements: a bounce made from a workflow body.
-- (Conventions: see lifecycle.sql.) The bounce's transaction is BEGIN IMMEDIATE, which
-- holds the write lock: the fence below cannot be separated from the writes it guards.

-- name: bounce_fence
-- Whether the caller still owns its workflow, and the checkpoint an earlier attempt may
-- have committed at this step id before its reply was lost.
SELECT EXISTS (SELECT 1 FROM workflow_status
               WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid),
       (SELECT output FROM operation_outputs
        WHERE workflow_uuid = :workflow_id AND function_id = :function_id)

-- name: record_bounce
-- The DBOS.debounce_delayed_workflow checkpoint, in the bounce's transaction.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, application_name, retention_timestamp
) VALUES (
    :workflow_id, :function_id, 'DBOS.debounce_delayed_workflow', :output,
    'portable_json', :started_at, :now, :application_name, :now
)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
