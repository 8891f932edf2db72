-- The PostgreSQL backend's statements: messages, events and streams.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

-- name: send_message
-- A message, and (from a workflow) its DBOS.send checkpoint, in one fenced statement.
-- The idempotent message id makes a retried send insert nothing. A destination that does
-- not exist fails the whole statement on the foreign key. The migration-1 trigger NOTIFYs
-- receivers when it commits.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE %(caller_id)s::text IS NOT NULL
      AND workflow_uuid = %(caller_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
), allowed AS (
    SELECT 1 AS ok WHERE %(caller_id)s::text IS NULL OR EXISTS (SELECT 1 FROM owner)
), sent AS (
    INSERT INTO {schema}.notifications (
        message_uuid, destination_uuid, topic, message, created_at_epoch_ms, serialization
    )
    SELECT %(message_uuid)s, %(destination_id)s, %(topic)s, %(message)s, %(now)s,
           %(serialization)s
    FROM allowed
    ON CONFLICT (message_uuid) DO NOTHING
), checkpoint AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
        application_name
    )
    SELECT workflow_uuid, %(function_id)s, %(function_name)s, %(now)s, %(now)s,
           %(application_name)s
    FROM owner
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
)
SELECT count(*) FROM allowed

-- name: consume_message
-- Receive, in one fenced statement: unless this step id already holds its DBOS.recv
-- checkpoint (an earlier attempt committed, its reply was lost: return what it received),
-- mark the oldest unconsumed message on the topic consumed by this step id and record it
-- as the checkpoint. Messages are marked, never deleted (a rewind can un-consume them).
-- Columns: whether the fence held, the recorded message (and its format), the newly
-- consumed message (and its format); both NULL when there is nothing to receive.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
), recorded AS (
    SELECT output, serialization FROM {schema}.operation_outputs
    WHERE workflow_uuid = %(workflow_id)s AND function_id = %(function_id)s
      AND EXISTS (SELECT 1 FROM owner)
), oldest AS (
    SELECT message_uuid FROM {schema}.notifications
    WHERE destination_uuid = %(workflow_id)s AND topic = %(topic)s AND NOT consumed
      AND EXISTS (SELECT 1 FROM owner) AND NOT EXISTS (SELECT 1 FROM recorded)
    ORDER BY created_at_epoch_ms ASC
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), consumed AS (
    UPDATE {schema}.notifications AS n
    SET consumed = TRUE, consumed_by_function_id = %(function_id)s
    FROM oldest WHERE n.message_uuid = oldest.message_uuid
    RETURNING n.message, n.serialization
), checkpoint AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, output, serialization,
        started_at_epoch_ms, completed_at_epoch_ms, application_name
    )
    SELECT %(workflow_id)s, %(function_id)s, 'DBOS.recv', message, serialization,
           %(started_at)s, %(now)s, %(application_name)s
    FROM consumed
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
)
SELECT (SELECT count(*) FROM owner), recorded.output, recorded.serialization,
       consumed.message, consumed.serialization
FROM (SELECT 1) AS one
LEFT JOIN recorded ON TRUE
LEFT JOIN consumed ON TRUE

-- name: set_event
-- Publish an event: the latest value per key, its history row at the step id, and (from a
-- workflow) the DBOS.setEvent checkpoint, in one fenced statement. Readers are pushed a
-- NOTIFY by the coalescing notifier after it commits.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
), latest AS (
    INSERT INTO {schema}.workflow_events (workflow_uuid, key, value, serialization)
    SELECT workflow_uuid, %(key)s, %(value)s, %(serialization)s FROM owner
    ON CONFLICT (workflow_uuid, key)
    DO UPDATE SET value = excluded.value, serialization = excluded.serialization
), history AS (
    INSERT INTO {schema}.workflow_events_history (
        workflow_uuid, function_id, key, value, serialization
    )
    SELECT workflow_uuid, %(function_id)s, %(key)s, %(value)s, %(serialization)s FROM owner
    ON CONFLICT (workflow_uuid, function_id, key)
    DO UPDATE SET value = excluded.value, serialization = excluded.serialization
), checkpoint AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
        application_name
    )
    SELECT workflow_uuid, %(function_id)s, 'DBOS.setEvent', %(now)s, %(now)s,
           %(application_name)s
    FROM owner WHERE %(record)s
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
)
SELECT count(*) FROM owner

-- name: write_stream
-- Append to a stream at the next offset (from 0) and (from a workflow) record the
-- DBOS.writeStream/closeStream checkpoint, in one fenced statement. From a workflow the
-- checkpoint makes it idempotent: an earlier attempt that committed (its reply lost) left
-- the checkpoint, and nothing is appended again. A concurrent writer may take the same
-- offset first: the primary key rejects it and the caller retries.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
), appended AS (
    INSERT INTO {schema}.streams (workflow_uuid, key, value, "offset", function_id, serialization)
    SELECT workflow_uuid, %(key)s, %(value)s,
           COALESCE((SELECT max("offset") FROM {schema}.streams
                     WHERE workflow_uuid = %(workflow_id)s AND key = %(key)s), -1) + 1,
           %(function_id)s, %(serialization)s
    FROM owner
    WHERE NOT (%(record)s AND EXISTS (
        SELECT 1 FROM {schema}.operation_outputs
        WHERE workflow_uuid = %(workflow_id)s AND function_id = %(function_id)s))
), checkpoint AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
        application_name
    )
    SELECT workflow_uuid, %(function_id)s, %(function_name)s, %(now)s, %(now)s,
           %(application_name)s
    FROM owner WHERE %(record)s
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
)
SELECT count(*) FROM owner
