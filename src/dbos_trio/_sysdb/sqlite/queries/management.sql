-- The SQLite backend's statements: cancel, resume, delete, delay, fork, lookups.
-- (Conventions: see lifecycle.sql.)

-- name: delete_workflows
-- Payload and step tables have no foreign key to workflow_status (migration 112), so they
-- are deleted explicitly, in the same transaction as the rows; messages, events and
-- streams go by cascade.
DELETE FROM workflow_input WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids));
DELETE FROM workflow_output WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids));
DELETE FROM operation_outputs
WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids));
DELETE FROM workflow_status WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: fork_workflow
-- Fork: a new ENQUEUED workflow with the original's function, inputs, format and owner (a
-- version-less row by default, so the latest version picks it up), and copies of the
-- checkpoints, event history, latest events and stream values written before start_step,
-- so the fork re-runs from start_step on. Messages are not copied. Every statement reads
-- the original, so a missing one copies nothing, and the last comes back empty. An
-- existing fork id fails on the primary key.
INSERT INTO workflow_status (
    workflow_uuid, status, name, class_name, config_name, application_id,
    authenticated_user, authenticated_roles, assumed_role, serialization, attributes,
    application_name, queue_name, queue_partition_key, application_version,
    forked_from, workflow_timeout_ms, recovery_attempts, priority, created_at, updated_at
)
SELECT :forked_id, 'ENQUEUED', name, class_name, config_name, application_id,
       authenticated_user, authenticated_roles, assumed_role, serialization, attributes,
       COALESCE(application_name, :application_name), :queue_name, :queue_partition_key,
       :application_version, :original_id, :timeout_ms, 0, 0, :now, :now
FROM workflow_status WHERE workflow_uuid = :original_id;
INSERT INTO workflow_input (workflow_uuid, inputs, retention_timestamp)
SELECT :forked_id, COALESCE(wi.inputs, ws.inputs), :now
FROM workflow_status AS ws
LEFT JOIN workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :original_id;
UPDATE workflow_status SET was_forked_from = TRUE WHERE workflow_uuid = :original_id;
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, child_workflow_id,
    started_at_epoch_ms, completed_at_epoch_ms, serialization, application_name,
    retention_timestamp
)
SELECT :forked_id, function_id, function_name, output, error,
       -- replacement_children: {original child id: the id the fork uses instead}
       COALESCE((SELECT r.value FROM json_each(:replacement_children) AS r
                 WHERE r.key = child_workflow_id), child_workflow_id),
       started_at_epoch_ms, completed_at_epoch_ms, serialization,
       (SELECT application_name FROM workflow_status WHERE workflow_uuid = :forked_id), :now
FROM operation_outputs
WHERE workflow_uuid = :original_id AND function_id < :start_step;
INSERT INTO workflow_events_history (workflow_uuid, function_id, key, value, serialization)
SELECT :forked_id, function_id, key, value, serialization
FROM workflow_events_history
WHERE workflow_uuid = :original_id AND function_id < :start_step;
INSERT INTO workflow_events (workflow_uuid, key, value, serialization)
SELECT :forked_id, key, value, serialization FROM (
    SELECT key, value, serialization,
           row_number() OVER (PARTITION BY key ORDER BY function_id DESC) AS newest
    FROM workflow_events_history
    WHERE workflow_uuid = :original_id AND function_id < :start_step
)
WHERE newest = 1;
INSERT INTO streams (workflow_uuid, key, value, "offset", function_id, serialization)
SELECT :forked_id, key, value, "offset", function_id, serialization
FROM streams
WHERE workflow_uuid = :original_id AND function_id < :start_step;
SELECT workflow_uuid FROM workflow_status
WHERE workflow_uuid = :forked_id AND forked_from = :original_id
