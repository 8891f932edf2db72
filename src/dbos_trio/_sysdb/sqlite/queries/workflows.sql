-- The SQLite backend's statements: workflow rows, checkpoints and outcomes.
-- (Conventions: see lifecycle.sql.) "The fence" below is the ownership check every write
-- made for a running execution carries: EXISTS (the workflow row with this owner_xid).

-- name: init_workflow
-- Create a workflow row and its inputs, or find the existing row untouched; the last
-- statement says which (by the creator token) and brings the stored outcome of a finished
-- row, so a repeated call returns without a second query. A deduplication id already held
-- on the queue fails on uq_workflow_status_dedup_id.
INSERT INTO workflow_status ({new_workflow_columns}) VALUES ({new_workflow_values})
ON CONFLICT (workflow_uuid) DO NOTHING;
INSERT INTO workflow_input (workflow_uuid, inputs, retention_timestamp)
SELECT :workflow_id, :inputs, :created_at
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND creator_xid = :creator_xid)
ON CONFLICT (workflow_uuid) DO NOTHING;
SELECT ws.creator_xid IS :creator_xid, ws.status, ws.name, ws.class_name, ws.config_name,
       ws.queue_name, ws.serialization, ws.workflow_deadline_epoch_ms,
       COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error), NULL
FROM workflow_status AS ws
LEFT JOIN workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :workflow_id

-- name: init_child_workflow
-- init_workflow for a child started from a workflow body: the parent's checkpoint (step
-- id, child's name, child id) is written in the same transaction, and nothing at all is
-- written (and nothing comes back) unless the parent's execution still owns the parent.
-- The last column is the child id the parent's checkpoint holds afterwards.
INSERT INTO workflow_status ({new_workflow_columns})
SELECT {new_workflow_values}
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :parent_id AND owner_xid = :parent_owner_xid)
ON CONFLICT (workflow_uuid) DO NOTHING;
INSERT INTO workflow_input (workflow_uuid, inputs, retention_timestamp)
SELECT :workflow_id, :inputs, :created_at
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND creator_xid = :creator_xid)
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :parent_id AND owner_xid = :parent_owner_xid)
ON CONFLICT (workflow_uuid) DO NOTHING;
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, child_workflow_id,
    started_at_epoch_ms, completed_at_epoch_ms, application_name, retention_timestamp
)
SELECT :parent_id, :parent_function_id, :parent_function_name, :workflow_id,
       :parent_started_at, :created_at, :parent_application_name, :created_at
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :parent_id AND owner_xid = :parent_owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING;
SELECT ws.creator_xid IS :creator_xid, ws.status, ws.name, ws.class_name, ws.config_name,
       ws.queue_name, ws.serialization, ws.workflow_deadline_epoch_ms,
       COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error),
       (SELECT child_workflow_id FROM operation_outputs
        WHERE workflow_uuid = :parent_id AND function_id = :parent_function_id)
FROM workflow_status AS ws
LEFT JOIN workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :workflow_id
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :parent_id AND owner_xid = :parent_owner_xid)

-- name: record_step
-- Record one step outcome, fenced. An existing checkpoint at that id is kept. No row back
-- means "not recorded"; diagnose_step_write says why.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms, application_name,
    retention_timestamp
)
SELECT :workflow_id, :function_id, :function_name, :output, :error, :serialization,
       :child_workflow_id, :started_at, :completed_at, :application_name,
       COALESCE(:started_at, :completed_at,
                CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
RETURNING 1

-- name: record_outcome
-- The workflow's final status and payload, only while it is PENDING and still ours (the
-- payload is written first, under the same check); the last statement counts the status
-- change, which says whether we won.
INSERT INTO workflow_output (workflow_uuid, output, error, retention_timestamp)
SELECT :workflow_id, :output, :error, :completed_at
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND status = 'PENDING'
                AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid) DO UPDATE SET output = excluded.output, error = excluded.error;
UPDATE workflow_status
SET status = :status, deduplication_id = NULL, owner_xid = NULL,
    updated_at = :completed_at, completed_at = :completed_at
WHERE workflow_uuid = :workflow_id AND status = 'PENDING' AND owner_xid = :owner_xid;
SELECT changes()
