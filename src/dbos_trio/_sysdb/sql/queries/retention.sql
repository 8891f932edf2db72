-- Statements both backends run as written: the bounds of garbage collection, and the
-- global timeout (cancel everything active created before a time).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.
-- ":application_name" NULL means every application; else that application's rows and
-- unclaimed ones (NULL application_name), as everywhere else.

-- name: gc_nth_newest
-- The created_at of the (:offset + 1)-th newest workflow of the application, counting
-- every row (active ones too): keep_newest keeps that many, whatever their status.
SELECT created_at FROM {schema}.workflow_status
WHERE (CAST(:application_name AS TEXT) IS NULL
       OR application_name = :application_name OR application_name IS NULL)
ORDER BY created_at DESC
LIMIT 1 OFFSET :offset

-- name: cancel_created_before
-- One batch of the global timeout: active rows created before the cutoff become
-- CANCELLED, exactly as a cancel does (owner token cleared, so an execution elsewhere
-- stops at its next fenced write; queue and deduplication id released).
UPDATE {schema}.workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE status IN ('PENDING', 'ENQUEUED', 'DELAYED') AND created_at < :created_before
      AND (CAST(:application_name AS TEXT) IS NULL
           OR application_name = :application_name OR application_name IS NULL)
    ORDER BY created_at
    LIMIT :batch_size
)
  AND status IN ('PENDING', 'ENQUEUED', 'DELAYED')
RETURNING workflow_uuid

-- name: payload_references
-- One batch of the payload collector's mark (dbos_trio._engine.admin.payloads): the
-- distinct payload store references (text starting 'dbos_trio_payload:') held by any row
-- of the schema, every application's, after :after in text order. Errors are never
-- stored by reference, so only value columns are read. Each batch scans these columns.
SELECT DISTINCT ref FROM (
    SELECT inputs AS ref FROM {schema}.workflow_status
    WHERE substr(inputs, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT output FROM {schema}.workflow_status
    WHERE substr(output, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT inputs FROM {schema}.workflow_input
    WHERE substr(inputs, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT output FROM {schema}.workflow_output
    WHERE substr(output, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT output FROM {schema}.operation_outputs
    WHERE substr(output, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT message FROM {schema}.notifications
    WHERE substr(message, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT value FROM {schema}.workflow_events
    WHERE substr(value, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT value FROM {schema}.workflow_events_history
    WHERE substr(value, 1, 18) = 'dbos_trio_payload:'
    UNION ALL SELECT value FROM {schema}.streams
    WHERE substr(value, 1, 18) = 'dbos_trio_payload:'
) AS refs
WHERE ref > :after
ORDER BY ref
LIMIT :batch_size
