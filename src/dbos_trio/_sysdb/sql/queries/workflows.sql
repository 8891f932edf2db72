-- Statements both backends run as written: workflow rows, checkpoints and outcomes.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table (the
-- quoted schema on PostgreSQL, "main" on SQLite); {in:<list parameter>} for membership
-- in a list; {now_ms} for the database's clock in epoch milliseconds.

-- name: diagnose_step_write
-- Why a fenced write wrote nothing: the workflow's status and whether we still own it,
-- and what is already recorded at that step id.
SELECT ws.status, COALESCE(ws.owner_xid = :owner_xid, FALSE),
       oo.function_name, oo.completed_at_epoch_ms, oo.output, oo.error
FROM (SELECT 1) AS one
LEFT JOIN {schema}.workflow_status AS ws ON ws.workflow_uuid = :workflow_id
LEFT JOIN {schema}.operation_outputs AS oo
       ON oo.workflow_uuid = :workflow_id AND oo.function_id = :function_id

-- name: load_steps
-- All checkpoints of one workflow, for replay (loaded once per execution).
SELECT function_id, function_name, output, error, serialization, child_workflow_id,
       started_at_epoch_ms, completed_at_epoch_ms
FROM {schema}.operation_outputs
WHERE workflow_uuid = :workflow_id
ORDER BY function_id

-- name: get_outcome
-- Status and stored outcome (new payload table first, legacy columns as fallback), and
-- what a waiter needs to tell a row nobody can ever run (no name, no delay).
SELECT ws.status, COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error),
       ws.serialization, ws.name, ws.delay_until_epoch_ms
FROM {schema}.workflow_status AS ws
LEFT JOIN {schema}.workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :workflow_id

-- name: owners_of
-- Who holds each of these rows now: a running execution compares it with its own token
-- to learn that it was cancelled, re-owned or deleted elsewhere.
SELECT workflow_uuid, status, owner_xid FROM {schema}.workflow_status
WHERE workflow_uuid {in:workflow_ids}
