-- Statements both backends run as written: read-only views for operators (the dashboard).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- {schema}. before every table. Nothing here writes or locks: each is one plain read.

-- name: list_events
-- The first :limit events by key (the dashboard pages them: a workflow may hold 100,000).
SELECT key, value, serialization FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id
ORDER BY key
LIMIT :limit

-- name: list_messages
SELECT message_uuid, topic, message, serialization, consumed, created_at_epoch_ms
FROM {schema}.notifications
WHERE destination_uuid = :workflow_id
ORDER BY created_at_epoch_ms, message_uuid
LIMIT :limit

-- name: list_stream_entries
SELECT key, "offset", value, serialization FROM {schema}.streams
WHERE workflow_uuid = :workflow_id
ORDER BY key, "offset"
LIMIT :limit

-- name: list_executor_summaries
-- One scan of the status table, grouped: fine for an operator's page, not for a hot path.
SELECT executor_id, application_version, MAX(application_name),
       SUM(CASE WHEN status = 'PENDING' THEN 1 ELSE 0 END), COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE executor_id IS NOT NULL
GROUP BY executor_id, application_version
ORDER BY MAX(updated_at) DESC, executor_id

-- name: queue_depths
-- Read every few seconds while metrics are on: two index searches (in-flight rows, DELAYED
-- rows; see active_counts_of_application for why two), never a scan of the table.
SELECT queue_name, status, COUNT(*) FROM {schema}.workflow_status
WHERE queue_name IS NOT NULL AND status IN ('ENQUEUED', 'PENDING')
GROUP BY queue_name, status
UNION ALL
SELECT queue_name, status, COUNT(*) FROM {schema}.workflow_status
WHERE queue_name IS NOT NULL AND status = 'DELAYED'
GROUP BY queue_name, status
ORDER BY 1, 2
