-- Statements both backends run as written: exporting a workflow's rows into a bundle, and
-- importing a bundle into another system database (dbos-trio workflow export / import).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name).
-- Every column is read and written as stored: payload text passes through untouched, so
-- a bundle keeps every SDK's formats byte for byte. The column lists here and in
-- sql/bundles.py name the same columns in the same order.

-- name: bundle_status
-- The whole workflow_status row (attributes as JSON text on both backends).
SELECT workflow_uuid, status, name, authenticated_user, assumed_role, authenticated_roles,
       request, output, error, executor_id, created_at, updated_at, application_version,
       application_id, class_name, config_name, recovery_attempts, queue_name,
       workflow_timeout_ms, workflow_deadline_epoch_ms, inputs, started_at_epoch_ms,
       deduplication_id, priority, queue_partition_key, forked_from, was_forked_from,
       owner_xid, parent_workflow_id, serialization, delay_until_epoch_ms, rate_limited,
       completed_at, CAST(attributes AS TEXT), schedule_name, debounce_deadline_epoch_ms,
       is_debounced, application_name, creator_xid
FROM {schema}.workflow_status
WHERE workflow_uuid = :workflow_id

-- name: bundle_input
SELECT inputs FROM {schema}.workflow_input WHERE workflow_uuid = :workflow_id

-- name: bundle_output
SELECT output, error FROM {schema}.workflow_output WHERE workflow_uuid = :workflow_id

-- name: bundle_steps
SELECT function_id, function_name, output, error, child_workflow_id, started_at_epoch_ms,
       completed_at_epoch_ms, serialization, application_name
FROM {schema}.operation_outputs
WHERE workflow_uuid = :workflow_id
ORDER BY function_id

-- name: bundle_events
SELECT key, value, serialization FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id
ORDER BY key

-- name: bundle_event_history
SELECT function_id, key, value, serialization FROM {schema}.workflow_events_history
WHERE workflow_uuid = :workflow_id
ORDER BY function_id, key

-- name: bundle_streams
SELECT key, "offset", value, function_id, serialization FROM {schema}.streams
WHERE workflow_uuid = :workflow_id
ORDER BY key, "offset"

-- name: bundle_notifications
-- The messages sent to the workflow, consumed (with the recv step that took each) or not.
SELECT message_uuid, topic, message, created_at_epoch_ms, serialization, consumed,
       consumed_by_function_id
FROM {schema}.notifications
WHERE destination_uuid = :workflow_id
ORDER BY created_at_epoch_ms, message_uuid

-- name: bundle_insert_status
-- The columns a new row takes (as every insert of a workflow row names them) ...
INSERT INTO {schema}.workflow_status ({new_workflow_columns}) VALUES ({new_workflow_values})

-- name: bundle_update_status
-- ... and the rest of the row, as exported.
UPDATE {schema}.workflow_status
SET assumed_role = :assumed_role, request = :request, output = :output, error = :error,
    inputs = :legacy_inputs, started_at_epoch_ms = :started_at_epoch_ms,
    was_forked_from = :was_forked_from, rate_limited = :rate_limited,
    completed_at = :completed_at, updated_at = :updated_at
WHERE workflow_uuid = :workflow_id

-- name: bundle_insert_input
INSERT INTO {schema}.workflow_input (workflow_uuid, inputs) VALUES (:workflow_id, :inputs)

-- name: bundle_insert_output
INSERT INTO {schema}.workflow_output (workflow_uuid, output, error)
VALUES (:workflow_id, :output, :error)

-- name: bundle_insert_step
INSERT INTO {schema}.operation_outputs (
    workflow_uuid, function_id, function_name, output, error, child_workflow_id,
    started_at_epoch_ms, completed_at_epoch_ms, serialization, application_name
) VALUES (
    :workflow_id, :function_id, :function_name, :output, :error, :child_workflow_id,
    :started_at_epoch_ms, :completed_at_epoch_ms, :serialization, :application_name
)

-- name: bundle_insert_event
INSERT INTO {schema}.workflow_events (workflow_uuid, key, value, serialization)
VALUES (:workflow_id, :key, :value, :serialization)

-- name: bundle_insert_event_history
INSERT INTO {schema}.workflow_events_history (workflow_uuid, function_id, key, value,
                                              serialization)
VALUES (:workflow_id, :function_id, :key, :value, :serialization)

-- name: bundle_insert_stream
INSERT INTO {schema}.streams (workflow_uuid, key, "offset", value, function_id, serialization)
VALUES (:workflow_id, :key, :offset, :value, :function_id, :serialization)

-- name: bundle_insert_notification
INSERT INTO {schema}.notifications (message_uuid, destination_uuid, topic, message,
                                    created_at_epoch_ms, serialization, consumed,
                                    consumed_by_function_id)
VALUES (:message_uuid, :workflow_id, :topic, :message, :created_at_epoch_ms, :serialization,
        :consumed, :consumed_by_function_id)

-- name: bundle_delete_notifications
-- Overwriting an id: its rows go first, in the import's transaction (children first).
DELETE FROM {schema}.notifications WHERE destination_uuid = :workflow_id

-- name: bundle_delete_streams
DELETE FROM {schema}.streams WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_event_history
DELETE FROM {schema}.workflow_events_history WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_events
DELETE FROM {schema}.workflow_events WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_steps
DELETE FROM {schema}.operation_outputs WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_output
DELETE FROM {schema}.workflow_output WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_input
DELETE FROM {schema}.workflow_input WHERE workflow_uuid = :workflow_id

-- name: bundle_delete_status
DELETE FROM {schema}.workflow_status WHERE workflow_uuid = :workflow_id
