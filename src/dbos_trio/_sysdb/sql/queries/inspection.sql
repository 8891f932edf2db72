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

-- The bounded reads of the faces that show values to a person (the CLI, the dashboard):
-- each payload column comes whole if it is at most :whole bytes, else as its first :head
-- characters, and beside it its size in bytes ({octets:col}: octet_length on PostgreSQL,
-- length(CAST(col AS BLOB)) on SQLite), which neither engine needs the value's text for,
-- so a value over the bound never crosses to the process (sysdb/bounded.py). substr, not
-- left(): the same on both engines, and PostgreSQL reads only the slice it returns.

-- name: list_steps_bounded
-- load_steps for a person: paged here (LIMIT/OFFSET), outputs and errors bounded.
SELECT function_id, function_name,
       CASE WHEN {octets:output} <= :whole THEN output
            ELSE substr(output, 1, CAST(:head AS INTEGER)) END,
       CASE WHEN {octets:error} <= :whole THEN error
            ELSE substr(error, 1, CAST(:head AS INTEGER)) END,
       serialization, child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms,
       {octets:output}, {octets:error}
FROM {schema}.operation_outputs
WHERE workflow_uuid = :workflow_id
ORDER BY function_id
LIMIT :limit OFFSET :offset

-- name: list_events_bounded
SELECT key,
       CASE WHEN {octets:value} <= :whole THEN value
            ELSE substr(value, 1, CAST(:head AS INTEGER)) END,
       serialization, {octets:value}
FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id
ORDER BY key
LIMIT :limit

-- name: list_messages_bounded
SELECT message_uuid, topic,
       CASE WHEN {octets:message} <= :whole THEN message
            ELSE substr(message, 1, CAST(:head AS INTEGER)) END,
       serialization, consumed, created_at_epoch_ms, {octets:message}
FROM {schema}.notifications
WHERE destination_uuid = :workflow_id
ORDER BY created_at_epoch_ms, message_uuid
LIMIT :limit

-- name: list_stream_entries_bounded
SELECT key, "offset",
       CASE WHEN {octets:value} <= :whole THEN value
            ELSE substr(value, 1, CAST(:head AS INTEGER)) END,
       serialization, {octets:value}
FROM {schema}.streams
WHERE workflow_uuid = :workflow_id
ORDER BY key, "offset"
LIMIT :limit
