-- The SQLite backend's statements: messages, events and streams.
-- (Conventions: see lifecycle.sql.) "The fence" is EXISTS (the caller's workflow row with
-- the caller's owner_xid); every statement of a fenced script carries it, and the last one
-- reports it, so a stale execution writes nothing and is told so.

-- name: send_message
-- A message, and (from a workflow) its DBOS.send checkpoint. The idempotent message id
-- makes a retried send insert nothing; a destination that does not exist fails on the
-- foreign key. The last statement says whether the fence held (true without a caller).
INSERT INTO notifications (
    message_uuid, destination_uuid, topic, message, created_at_epoch_ms, serialization
)
SELECT :message_uuid, :destination_id, :topic, :message, :now, :serialization
WHERE :caller_id IS NULL
   OR EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :caller_id AND owner_xid = :owner_xid)
ON CONFLICT (message_uuid) DO NOTHING;
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
    application_name, retention_timestamp
)
SELECT :caller_id, :function_id, :function_name, :now, :now, :application_name, :now
WHERE :caller_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :caller_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING;
SELECT :caller_id IS NULL
    OR EXISTS (SELECT 1 FROM workflow_status
               WHERE workflow_uuid = :caller_id AND owner_xid = :owner_xid)

-- name: consume_message
-- Receive, fenced: unless this step id already holds its DBOS.recv checkpoint (an earlier
-- attempt committed: return what it received), mark the oldest unconsumed message on the
-- topic (oldest first, then in insertion order) consumed by this step id, and record it as
-- the checkpoint. Messages are marked, never deleted (a rewind can un-consume them).
-- Columns as on PostgreSQL: the fence, the recorded message and its format, and the newly
-- consumed one (here always read back through the checkpoint, so NULL).
UPDATE notifications SET consumed = TRUE, consumed_by_function_id = :function_id
WHERE message_uuid = (
        SELECT message_uuid FROM notifications
        WHERE destination_uuid = :workflow_id AND topic = :topic AND NOT consumed
        ORDER BY created_at_epoch_ms ASC, rowid ASC
        LIMIT 1)
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
  AND NOT EXISTS (SELECT 1 FROM operation_outputs
                  WHERE workflow_uuid = :workflow_id AND function_id = :function_id);
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, application_name, retention_timestamp
)
SELECT :workflow_id, :function_id, 'DBOS.recv', message, serialization,
       :started_at, :now, :application_name, :now
FROM notifications
WHERE destination_uuid = :workflow_id AND topic = :topic AND consumed
  AND consumed_by_function_id = :function_id
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING;
SELECT EXISTS (SELECT 1 FROM workflow_status
               WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid),
       oo.output, oo.serialization, NULL, NULL
FROM (SELECT 1) AS one
LEFT JOIN operation_outputs AS oo
       ON oo.workflow_uuid = :workflow_id AND oo.function_id = :function_id
      AND oo.function_name = 'DBOS.recv'

-- name: set_event
-- Publish an event: the latest value per key, its history row at the step id (what forks
-- copy), and (from a workflow) the DBOS.setEvent checkpoint, all fenced; the last
-- statement says whether the fence held.
INSERT INTO workflow_events (workflow_uuid, key, value, serialization)
SELECT :workflow_id, :key, :value, :serialization
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, key)
DO UPDATE SET value = excluded.value, serialization = excluded.serialization;
INSERT INTO workflow_events_history (workflow_uuid, function_id, key, value, serialization)
SELECT :workflow_id, :function_id, :key, :value, :serialization
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id, key)
DO UPDATE SET value = excluded.value, serialization = excluded.serialization;
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
    application_name, retention_timestamp
)
SELECT :workflow_id, :function_id, 'DBOS.setEvent', :now, :now, :application_name, :now
WHERE :record
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING;
SELECT EXISTS (SELECT 1 FROM workflow_status
               WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)

-- name: write_stream
-- Append to a stream at the next offset (from 0) and (from a workflow) record the
-- DBOS.writeStream/closeStream checkpoint, fenced; from a workflow, not again if the
-- checkpoint exists already (as on PostgreSQL). With one writer at a time there is no race
-- for the offset. The last statement says whether the fence held.
INSERT INTO streams (workflow_uuid, key, value, "offset", function_id, serialization)
SELECT :workflow_id, :key, :value,
       COALESCE((SELECT max("offset") FROM streams
                 WHERE workflow_uuid = :workflow_id AND key = :key), -1) + 1,
       :function_id, :serialization
WHERE EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
  AND NOT (:record AND EXISTS (SELECT 1 FROM operation_outputs
                               WHERE workflow_uuid = :workflow_id
                                 AND function_id = :function_id));
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
    application_name, retention_timestamp
)
SELECT :workflow_id, :function_id, :function_name, :now, :now, :application_name, :now
WHERE :record
  AND EXISTS (SELECT 1 FROM workflow_status
              WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING;
SELECT EXISTS (SELECT 1 FROM workflow_status
               WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid)
