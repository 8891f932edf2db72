-- The PostgreSQL backend's statements: cancel, resume, delete, delay, fork.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

-- name: delete_workflows
-- Payload and step tables have no foreign key to workflow_status (migration 112), so they
-- are deleted explicitly; messages, events and streams go by cascade.
WITH inputs AS (
    DELETE FROM {schema}.workflow_input WHERE workflow_uuid = ANY(%(workflow_ids)s)
), outputs AS (
    DELETE FROM {schema}.workflow_output WHERE workflow_uuid = ANY(%(workflow_ids)s)
), steps AS (
    DELETE FROM {schema}.operation_outputs WHERE workflow_uuid = ANY(%(workflow_ids)s)
)
DELETE FROM {schema}.workflow_status WHERE workflow_uuid = ANY(%(workflow_ids)s)

-- name: fork_workflow
-- Fork, in one statement: a new ENQUEUED workflow with the original's function, inputs,
-- format and owner (a version-less row by default, so the latest version picks it up),
-- and copies of the checkpoints, event history, latest events and stream values written
-- before start_step, so the fork re-runs from start_step on. Messages are not copied.
-- No row back: the original does not exist.
WITH original AS (
    SELECT ws.name, ws.class_name, ws.config_name, ws.application_id,
           ws.authenticated_user, ws.authenticated_roles, ws.assumed_role, ws.serialization,
           ws.attributes, COALESCE(ws.application_name, %(application_name)s) AS owner,
           COALESCE(wi.inputs, ws.inputs) AS inputs
    FROM {schema}.workflow_status AS ws
    LEFT JOIN {schema}.workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid
    WHERE ws.workflow_uuid = %(original_id)s
), forked AS (
    INSERT INTO {schema}.workflow_status (
        workflow_uuid, status, name, class_name, config_name, application_id,
        authenticated_user, authenticated_roles, assumed_role, serialization, attributes,
        application_name, queue_name, queue_partition_key, application_version,
        forked_from, workflow_timeout_ms, recovery_attempts, priority, created_at, updated_at
    )
    SELECT %(forked_id)s, 'ENQUEUED', name, class_name, config_name, application_id,
           authenticated_user, authenticated_roles, assumed_role, serialization, attributes,
           owner, %(queue_name)s, %(queue_partition_key)s, %(application_version)s,
           %(original_id)s, %(timeout_ms)s, 0, 0, %(now)s, %(now)s
    FROM original
    RETURNING workflow_uuid
), inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
    SELECT %(forked_id)s, inputs FROM original
), marked AS (
    UPDATE {schema}.workflow_status SET was_forked_from = TRUE
    WHERE workflow_uuid = %(original_id)s
), steps AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, output, error, child_workflow_id,
        started_at_epoch_ms, completed_at_epoch_ms, serialization, application_name
    )
    SELECT %(forked_id)s, function_id, function_name, output, error,
           -- replacement_children: {original child id: the id the fork uses instead}
           COALESCE((SELECT r.value FROM jsonb_each_text(%(replacement_children)s::jsonb) AS r
                     WHERE r.key = child_workflow_id), child_workflow_id),
           started_at_epoch_ms, completed_at_epoch_ms, serialization, (SELECT owner FROM original)
    FROM {schema}.operation_outputs
    WHERE workflow_uuid = %(original_id)s AND function_id < %(start_step)s
      AND EXISTS (SELECT 1 FROM original)
), history AS (
    INSERT INTO {schema}.workflow_events_history (
        workflow_uuid, function_id, key, value, serialization
    )
    SELECT %(forked_id)s, function_id, key, value, serialization
    FROM {schema}.workflow_events_history
    WHERE workflow_uuid = %(original_id)s AND function_id < %(start_step)s
), latest_events AS (
    INSERT INTO {schema}.workflow_events (workflow_uuid, key, value, serialization)
    SELECT DISTINCT ON (key) %(forked_id)s, key, value, serialization
    FROM {schema}.workflow_events_history
    WHERE workflow_uuid = %(original_id)s AND function_id < %(start_step)s
    ORDER BY key, function_id DESC
), stream_values AS (
    INSERT INTO {schema}.streams (workflow_uuid, key, value, "offset", function_id, serialization)
    SELECT %(forked_id)s, key, value, "offset", function_id, serialization
    FROM {schema}.streams
    WHERE workflow_uuid = %(original_id)s AND function_id < %(start_step)s
)
SELECT workflow_uuid FROM forked
