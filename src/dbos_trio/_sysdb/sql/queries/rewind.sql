-- Statements both backends run as written: rewinding a finished workflow to a step.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.
-- They run in order in one transaction (sql/rewind.py); each touches only the rewound
-- workflow's rows at or after :start_step.

-- name: rewind_status
-- The status to rewind from, and when the row last changed (a retried rewind whose first
-- attempt committed finds its own stamp).
SELECT status, updated_at FROM {schema}.workflow_status WHERE workflow_uuid = :workflow_id

-- name: rewind_delete_events
-- Events whose key was published at or after the cut lose their current value ...
DELETE FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id
  AND EXISTS (SELECT 1 FROM {schema}.workflow_events_history AS h
              WHERE h.workflow_uuid = :workflow_id AND h.key = workflow_events.key
                AND h.function_id >= :start_step)

-- name: rewind_restore_events
-- ... and get back the last value published before it (the history is the undo log).
INSERT INTO {schema}.workflow_events (workflow_uuid, key, value, serialization)
SELECT workflow_uuid, key, value, serialization FROM (
    SELECT h.workflow_uuid, h.key, h.value, h.serialization,
           row_number() OVER (PARTITION BY h.key ORDER BY h.function_id DESC) AS newest
    FROM {schema}.workflow_events_history AS h
    WHERE h.workflow_uuid = :workflow_id AND h.function_id < :start_step
      AND EXISTS (SELECT 1 FROM {schema}.workflow_events_history AS later
                  WHERE later.workflow_uuid = :workflow_id AND later.key = h.key
                    AND later.function_id >= :start_step)
) AS surviving
WHERE newest = 1

-- name: rewind_delete_stream_ends
-- Stream values stay where the discarded run wrote them; only a close marker written at
-- or after the cut goes, so the re-run can append again.
DELETE FROM {schema}.streams
WHERE workflow_uuid = :workflow_id AND function_id >= :start_step
  AND value = :closed_marker AND serialization = 'portable_json'

-- name: rewind_delete_steps
DELETE FROM {schema}.operation_outputs
WHERE workflow_uuid = :workflow_id AND function_id >= :start_step

-- name: rewind_delete_history
DELETE FROM {schema}.workflow_events_history
WHERE workflow_uuid = :workflow_id AND function_id >= :start_step

-- name: rewind_delete_messages
-- Messages the discarded run consumed at or after the cut, and those still unconsumed.
DELETE FROM {schema}.notifications
WHERE destination_uuid = :workflow_id
  AND (consumed_by_function_id >= :start_step OR NOT consumed)

-- name: rewind_delete_output
DELETE FROM {schema}.workflow_output WHERE workflow_uuid = :workflow_id

-- name: rewind_enqueue
-- Back on a queue (the internal one by default) as a fresh dispatch, if the status is
-- still the one the rewind read.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL,
    application_version = COALESCE(:application_version, application_version),
    queue_name = COALESCE(:queue_name, '_dbos_internal_queue'),
    queue_partition_key = :queue_partition_key, recovery_attempts = 0,
    workflow_deadline_epoch_ms = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL,
    updated_at = :now, completed_at = NULL, output = NULL, error = NULL
WHERE workflow_uuid = :workflow_id AND status = :status
