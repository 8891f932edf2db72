-- Statements both backends run as written: messages, events and streams.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table (the
-- quoted schema on PostgreSQL, "main" on SQLite); {in:<list parameter>} for membership
-- in a list; {now_ms} for the database's clock in epoch milliseconds.

-- name: has_message
-- Whether an unconsumed message waits on (destination, topic): the cheap look a waiting
-- receiver takes before paying for a consume.
SELECT EXISTS (
    SELECT 1 FROM {schema}.notifications
    WHERE destination_uuid = :workflow_id AND topic = :topic AND NOT consumed
)

-- name: get_event
SELECT value, serialization FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id AND key = :key

-- name: read_stream
-- Up to a batch of stream values from an offset, with the writer's status in the same
-- statement (no row at all: the writer does not exist).
SELECT ws.status, s."offset", s.value, s.serialization
FROM {schema}.workflow_status AS ws
LEFT JOIN {schema}.streams AS s
       ON s.workflow_uuid = ws.workflow_uuid AND s.key = :key
      AND s."offset" >= :offset AND s."offset" < :offset + :limit
WHERE ws.workflow_uuid = :workflow_id
ORDER BY s."offset"
