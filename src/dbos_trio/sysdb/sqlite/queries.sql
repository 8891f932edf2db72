-- Every SQL statement the SQLite backend issues, by name.
--
-- A block starts with a line "-- name: <name>"; the comment lines after it say what the
-- statement is for. Parameters use sqlite3's named style (:name). Tables are unqualified:
-- SQLite has no schemas. Lists travel as JSON arrays and are unpacked with json_each().
--
-- Each operation of the backend runs a few of these inside ONE transaction, and a write
-- transaction starts with BEGIN IMMEDIATE: it holds SQLite's single write lock from its
-- first statement, so a check (is this workflow still ours?) and the write that depends on
-- it cannot be separated by another writer. That lock is what FOR UPDATE, NOWAIT and
-- SKIP LOCKED buy on PostgreSQL. Times are passed in from the engine's clock, never read
-- from SQLite's, so a MockClock drives them (see _clock.py); the exceptions are the same
-- as on PostgreSQL: queue rows and application versions, whose timestamps the protocol
-- does not carry, take the database's wall clock.

-- name: owner_of
-- The status and owner token of a workflow, read under the write lock: the fence every
-- write made on behalf of a running execution checks first. No row: no such workflow.
SELECT status, owner_xid FROM workflow_status WHERE workflow_uuid = :workflow_id

-- name: insert_workflow
-- Create a workflow row; an existing id is left untouched (insert_workflow's caller then
-- reads the row back and tells the two cases apart by the creator token). A deduplication
-- id already held on the queue fails on uq_workflow_status_dedup_id.
INSERT INTO workflow_status (
    workflow_uuid, status, name, class_name, config_name,
    authenticated_user, authenticated_roles, executor_id,
    created_at, updated_at, application_version, application_id, application_name,
    recovery_attempts, queue_name, workflow_timeout_ms, workflow_deadline_epoch_ms,
    deduplication_id, priority, queue_partition_key, parent_workflow_id,
    serialization, delay_until_epoch_ms, owner_xid, creator_xid, forked_from
) VALUES (
    :workflow_id, :status, :name, :class_name, :config_name,
    :authenticated_user, :authenticated_roles, :executor_id,
    :created_at, :created_at, :application_version, :application_id, :application_name,
    :recovery_attempts, :queue_name, :timeout_ms, :deadline_epoch_ms,
    :deduplication_id, :priority, :queue_partition_key, :parent_workflow_id,
    :serialization, :delay_until_epoch_ms, :owner_xid, :creator_xid, :forked_from
)
ON CONFLICT (workflow_uuid) DO NOTHING

-- name: insert_inputs
-- The inputs of a workflow this call created.
INSERT INTO workflow_input (workflow_uuid, inputs, retention_timestamp)
VALUES (:workflow_id, :inputs, :created_at)
ON CONFLICT (workflow_uuid) DO NOTHING

-- name: init_result
-- The row init_workflow found or made, with the stored outcome when it is finished (new
-- payload table first, legacy columns as fallback).
SELECT ws.creator_xid, ws.status, ws.name, ws.class_name, ws.config_name, ws.queue_name,
       ws.serialization, ws.workflow_deadline_epoch_ms,
       COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error)
FROM workflow_status AS ws
LEFT JOIN workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :workflow_id

-- name: insert_child_checkpoint
-- The parent's checkpoint for starting a child (its name and id), written with the child's
-- row. An earlier execution's checkpoint at that step id is kept.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, child_workflow_id,
    started_at_epoch_ms, completed_at_epoch_ms, application_name, retention_timestamp
) VALUES (
    :parent_id, :parent_function_id, :parent_function_name, :workflow_id,
    :parent_started_at, :created_at, :parent_application_name, :created_at
)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: recorded_child
-- The child id the parent's checkpoint holds at a step id.
SELECT child_workflow_id FROM operation_outputs
WHERE workflow_uuid = :parent_id AND function_id = :parent_function_id

-- name: insert_step
-- Record one step outcome (the caller has checked the owner under the write lock). An
-- existing checkpoint at that id is kept; recorded_step then says whether it is the same.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms, application_name,
    retention_timestamp
) VALUES (
    :workflow_id, :function_id, :function_name, :output, :error, :serialization,
    :child_workflow_id, :started_at, :completed_at, :application_name,
    COALESCE(:started_at, :completed_at, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: recorded_step
-- What is already recorded at a step id (to tell a retried write from a different step).
SELECT function_name, completed_at_epoch_ms FROM operation_outputs
WHERE workflow_uuid = :workflow_id AND function_id = :function_id

-- name: load_steps
-- All checkpoints of one workflow, for replay (loaded once per execution).
SELECT function_id, function_name, output, error, serialization, child_workflow_id,
       started_at_epoch_ms, completed_at_epoch_ms
FROM operation_outputs
WHERE workflow_uuid = :workflow_id
ORDER BY function_id

-- name: finish_workflow
-- The workflow's final status, only while it is PENDING and still ours; the change count
-- says whether we won.
UPDATE workflow_status
SET status = :status, deduplication_id = NULL, owner_xid = NULL,
    updated_at = :completed_at, completed_at = :completed_at
WHERE workflow_uuid = :workflow_id AND status = 'PENDING' AND owner_xid = :owner_xid

-- name: store_outcome
-- The final payload, in the same transaction as finish_workflow (SQLite cannot put the
-- UPDATE in a CTE, so it is two statements where PostgreSQL has one).
INSERT INTO workflow_output (workflow_uuid, output, error, retention_timestamp)
VALUES (:workflow_id, :output, :error, :completed_at)
ON CONFLICT (workflow_uuid) DO UPDATE SET output = excluded.output, error = excluded.error

-- name: get_outcome
-- Status and stored outcome (new payload table first, legacy columns as fallback).
SELECT ws.status, COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error),
       ws.serialization
FROM workflow_status AS ws
LEFT JOIN workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :workflow_id

-- name: claim_unowned_version
-- Launch: adopt a version row written by a nameless (unclaimed) writer.
UPDATE application_versions SET application_name = :application_name
WHERE version_name = :version AND application_name IS NULL

-- name: insert_version
-- Register a version, stamped with the database's wall clock in milliseconds (PostgreSQL
-- stamps it with now(); the protocol carries no time for it).
INSERT INTO application_versions (
    version_id, version_name, version_timestamp, created_at, application_name
) VALUES (
    :version_id, :version,
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    :application_name
)
ON CONFLICT DO NOTHING

-- name: version_owner
SELECT application_name FROM application_versions WHERE version_name = :version

-- name: latest_version
-- The newest version of this application (or unclaimed): the one that may run version-less
-- queued rows. Of two stamped in the same millisecond, the one registered last.
SELECT version_name FROM application_versions
WHERE application_name = :application_name OR application_name IS NULL
ORDER BY version_timestamp DESC, rowid DESC
LIMIT 1

-- name: cancel_workflows
-- Cancel whatever is not finished. Clearing owner_xid is what stops an execution running
-- elsewhere: its next fenced write finds it no longer owns the row.
UPDATE workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))
  AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

-- name: list_children
SELECT workflow_uuid FROM workflow_status
WHERE parent_workflow_id IN (SELECT value FROM json_each(:workflow_ids))

-- name: find_deduplicated
-- The workflow holding a deduplication id on a queue (the id is cleared when it finishes).
SELECT workflow_uuid FROM workflow_status
WHERE queue_name = :queue_name AND deduplication_id = :deduplication_id

-- name: reenqueue_abandoned
-- Launch-time recovery, one write: this executor's (same id, same version) PENDING rows,
-- of this application or unclaimed, go back to their queue or the internal queue. The
-- next claim counts the attempt and re-stamps the executor, so repeating this is harmless.
UPDATE workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = :now,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE status = 'PENDING' AND executor_id = :executor_id
  AND application_version = :application_version
  AND (application_name = :application_name OR application_name IS NULL)

-- name: requeue_workflow
-- Hand a PENDING workflow from its owning execution back to its queue (or the internal
-- queue), e.g. a direct child whose parent was cancelled around it. Only its owner may.
UPDATE workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = :now,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE workflow_uuid = :workflow_id AND status = 'PENDING' AND owner_xid = :owner_xid

-- name: has_due_delayed
-- Whether release_delayed has anything to do: looked at without the write lock, so an idle
-- executor's sweeps never take it (other processes' writers would queue behind them).
SELECT EXISTS (
    SELECT 1 FROM workflow_status
    WHERE status = 'DELAYED' AND delay_until_epoch_ms <= :now
      AND (application_name = :application_name OR application_name IS NULL)
)

-- name: release_delayed
-- DELAYED rows whose time has come become ENQUEUED (a debounced row frees its dedup id).
UPDATE workflow_status
SET status = 'ENQUEUED', updated_at = :now,
    deduplication_id = CASE WHEN is_debounced THEN NULL ELSE deduplication_id END
WHERE status = 'DELAYED' AND delay_until_epoch_ms <= :now
  AND (application_name = :application_name OR application_name IS NULL)

-- name: upsert_queue
-- Register a queue: insert, or overwrite the configuration when allowed and the row is
-- ours or unclaimed (claiming it). A foreign owner's row is left as it is.
INSERT INTO queues AS q (
    name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
    priority_enabled, partition_queue, polling_interval_sec, created_at, updated_at,
    application_name, partition_concurrency, partition_worker_concurrency,
    partition_rate_limit_max, partition_rate_limit_period_sec
) VALUES (
    :name, :concurrency, :worker_concurrency, :rate_limit_max, :rate_limit_period_sec,
    TRUE, :partitioned, :polling_interval_sec,
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    :application_name, :partition_concurrency, :partition_worker_concurrency,
    :partition_rate_limit_max, :partition_rate_limit_period_sec
)
ON CONFLICT (name) DO UPDATE SET
    concurrency = excluded.concurrency, worker_concurrency = excluded.worker_concurrency,
    rate_limit_max = excluded.rate_limit_max,
    rate_limit_period_sec = excluded.rate_limit_period_sec,
    priority_enabled = TRUE, partition_queue = excluded.partition_queue,
    polling_interval_sec = excluded.polling_interval_sec, updated_at = excluded.updated_at,
    application_name = COALESCE(q.application_name, excluded.application_name),
    partition_concurrency = excluded.partition_concurrency,
    partition_worker_concurrency = excluded.partition_worker_concurrency,
    partition_rate_limit_max = excluded.partition_rate_limit_max,
    partition_rate_limit_period_sec = excluded.partition_rate_limit_period_sec
WHERE :overwrite
  AND (q.application_name IS NULL OR q.application_name = excluded.application_name)

-- name: queue_owner
SELECT application_name FROM queues WHERE name = :name

-- name: list_queues
-- Queue rows visible to an application: its own and unclaimed ones (all when no name).
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM queues
WHERE :application_name IS NULL OR application_name = :application_name
   OR application_name IS NULL
ORDER BY name

-- name: get_queue
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM queues
WHERE name = :name

-- name: delete_queue
DELETE FROM queues WHERE name = :name

-- name: list_partitions
-- Distinct partition keys with ENQUEUED rows (SQLite's planner skips through the
-- partition dequeue index on its own; PostgreSQL needs a recursive loose index scan).
SELECT DISTINCT queue_partition_key FROM workflow_status
WHERE queue_name = :queue_name AND status = 'ENQUEUED' AND queue_partition_key IS NOT NULL
ORDER BY queue_partition_key

-- name: count_recent_starts
-- Rate limit: dispatches of the queue counted by the limiter that started inside the
-- window (finished ones included), of this application or unclaimed. With a partition
-- key, only that partition's.
SELECT count(*) FROM workflow_status
WHERE queue_name = :queue_name AND rate_limited
  AND status NOT IN ('ENQUEUED', 'DELAYED')
  AND started_at_epoch_ms > :now - :period_ms
  AND (application_name = :application_name OR application_name IS NULL)
  AND (:partition_key IS NULL OR queue_partition_key = :partition_key)

-- name: count_running
-- Concurrency: PENDING rows of the queue across every executor, of this application or
-- unclaimed. With a partition key, only that partition's.
SELECT count(*) FROM workflow_status
WHERE queue_name = :queue_name AND status = 'PENDING'
  AND (application_name = :application_name OR application_name IS NULL)
  AND (:partition_key IS NULL OR queue_partition_key = :partition_key)

-- name: has_claimable
-- Whether a claim could take anything (the claim's own candidate filter, no budgets),
-- looked at without the write lock: an idle queue's polls never take it.
SELECT EXISTS (
    SELECT 1 FROM workflow_status
    WHERE queue_name = :queue_name AND status = 'ENQUEUED'
      AND (application_version = :application_version
           OR (:runs_latest_version AND application_version IS NULL))
      AND (application_name = :application_name OR application_name IS NULL)
      AND name IN (SELECT value FROM json_each(:workflow_names))
      AND (:partition_key IS NULL OR queue_partition_key = :partition_key)
)

-- name: claim
-- Dequeue: flip the head of the queue (or of one partition) to PENDING for this executor,
-- at most :budget rows (-1: no limit), in priority order, then age, then insertion order.
-- The budget was computed in the same write transaction from the counts above, so no other
-- executor can spend it meanwhile. The attempt is counted here, the deadline armed from the
-- timeout, and the inputs come back with the claimed rows.
UPDATE workflow_status
SET status = 'PENDING', owner_xid = :owner_xid,
    application_version = :application_version, executor_id = :executor_id,
    application_name = :application_name, started_at_epoch_ms = :now,
    rate_limited = :rate_limited, recovery_attempts = recovery_attempts + 1,
    updated_at = :now,
    workflow_deadline_epoch_ms = CASE
        WHEN workflow_timeout_ms IS NOT NULL AND workflow_deadline_epoch_ms IS NULL
        THEN :now + workflow_timeout_ms
        ELSE workflow_deadline_epoch_ms END
WHERE status = 'ENQUEUED' AND workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE queue_name = :queue_name AND status = 'ENQUEUED'
      AND (application_version = :application_version
           OR (:runs_latest_version AND application_version IS NULL))
      AND (application_name = :application_name OR application_name IS NULL)
      AND name IN (SELECT value FROM json_each(:workflow_names))
      AND (:partition_key IS NULL OR queue_partition_key = :partition_key)
    ORDER BY priority ASC, created_at ASC, rowid ASC
    LIMIT :budget
)
RETURNING workflow_uuid, name, class_name, config_name,
          COALESCE((SELECT wi.inputs FROM workflow_input AS wi
                    WHERE wi.workflow_uuid = workflow_status.workflow_uuid), inputs),
          serialization, workflow_deadline_epoch_ms, recovery_attempts, queue_name,
          queue_partition_key, priority, created_at, rowid

-- name: dead_letter
-- Park a workflow dispatched more often than its max_recovery_attempts allows.
UPDATE workflow_status
SET status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', owner_xid = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, queue_name = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'PENDING'
  AND recovery_attempts >= :observed_attempts

-- name: insert_message
-- A message. The idempotent message id makes a retried send insert nothing; a destination
-- that does not exist fails on the foreign key.
INSERT INTO notifications (
    message_uuid, destination_uuid, topic, message, created_at_epoch_ms, serialization
) VALUES (:message_uuid, :destination_id, :topic, :message, :now, :serialization)
ON CONFLICT (message_uuid) DO NOTHING

-- name: insert_checkpoint
-- The checkpoint of an operation that returns nothing (DBOS.send, DBOS.setEvent,
-- DBOS.writeStream, DBOS.closeStream), written with the operation itself.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, started_at_epoch_ms, completed_at_epoch_ms,
    application_name, retention_timestamp
) VALUES (:workflow_id, :function_id, :function_name, :now, :now, :application_name, :now)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: has_message
-- Whether an unconsumed message waits on (destination, topic): the cheap look a waiting
-- receiver takes before paying for a consume.
SELECT EXISTS (
    SELECT 1 FROM notifications
    WHERE destination_uuid = :workflow_id AND topic = :topic AND NOT consumed
)

-- name: oldest_message
-- The next message to receive: oldest first, and in insertion order among messages sent
-- in the same millisecond.
SELECT message_uuid, message, serialization FROM notifications
WHERE destination_uuid = :workflow_id AND topic = :topic AND NOT consumed
ORDER BY created_at_epoch_ms ASC, rowid ASC
LIMIT 1

-- name: consume_message
-- Mark a message consumed by the recv at this step id. Messages are marked, never deleted
-- (a rewind can un-consume them).
UPDATE notifications SET consumed = TRUE, consumed_by_function_id = :function_id
WHERE message_uuid = :message_uuid

-- name: insert_recv_checkpoint
-- The DBOS.recv checkpoint: the message received, verbatim in its own format.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, application_name, retention_timestamp
) VALUES (
    :workflow_id, :function_id, 'DBOS.recv', :message, :serialization,
    :started_at, :now, :application_name, :now
)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: upsert_event
-- The latest value of an event key.
INSERT INTO workflow_events (workflow_uuid, key, value, serialization)
VALUES (:workflow_id, :key, :value, :serialization)
ON CONFLICT (workflow_uuid, key)
DO UPDATE SET value = excluded.value, serialization = excluded.serialization

-- name: upsert_event_history
-- The event's history row at the step id that set it (what forks copy).
INSERT INTO workflow_events_history (workflow_uuid, function_id, key, value, serialization)
VALUES (:workflow_id, :function_id, :key, :value, :serialization)
ON CONFLICT (workflow_uuid, function_id, key)
DO UPDATE SET value = excluded.value, serialization = excluded.serialization

-- name: get_event
SELECT value, serialization FROM workflow_events
WHERE workflow_uuid = :workflow_id AND key = :key

-- name: append_stream
-- Append to a stream at the next offset (from 0). With one writer at a time there is no
-- race for the offset, unlike on PostgreSQL.
INSERT INTO streams (workflow_uuid, key, value, "offset", function_id, serialization)
SELECT :workflow_id, :key, :value,
       COALESCE((SELECT max("offset") FROM streams
                 WHERE workflow_uuid = :workflow_id AND key = :key), -1) + 1,
       :function_id, :serialization

-- name: read_stream
-- Up to a batch of stream values from an offset, with the writer's status in the same
-- statement (no row at all: the writer does not exist).
SELECT ws.status, s."offset", s.value, s.serialization
FROM workflow_status AS ws
LEFT JOIN streams AS s
       ON s.workflow_uuid = ws.workflow_uuid AND s.key = :key
      AND s."offset" >= :offset AND s."offset" < :offset + :limit
WHERE ws.workflow_uuid = :workflow_id
ORDER BY s."offset"

-- name: has_expired
-- Whether sweep_timeouts has anything to do, looked at without the write lock.
SELECT EXISTS (
    SELECT 1 FROM workflow_status
    WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')
      AND workflow_deadline_epoch_ms IS NOT NULL AND workflow_deadline_epoch_ms <= :now
      AND (application_name = :application_name OR application_name IS NULL)
)

-- name: sweep_timeouts
-- Cancel workflows of this application (or unclaimed) whose deadline has passed. The write
-- lock makes this sweep the only one running, as PostgreSQL's advisory lock does.
UPDATE workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')
      AND workflow_deadline_epoch_ms IS NOT NULL AND workflow_deadline_epoch_ms <= :now
      AND (application_name = :application_name OR application_name IS NULL)
    ORDER BY workflow_deadline_epoch_ms
    LIMIT 1000
)
RETURNING workflow_uuid

-- name: existing_workflows
SELECT workflow_uuid FROM workflow_status
WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: resume_workflows
-- Re-enqueue unfinished workflows (attempts reset, deadline re-armed at dequeue); their
-- checkpoints stay, so the re-run skips completed steps.
UPDATE workflow_status
SET status = 'ENQUEUED', owner_xid = NULL,
    queue_name = COALESCE(:queue_name, '_dbos_internal_queue'), recovery_attempts = 0,
    workflow_deadline_epoch_ms = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL,
    updated_at = :now, completed_at = NULL
WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))
  AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

-- name: delete_inputs
-- Deleting workflows: payload and step tables have no foreign key to workflow_status
-- (migration 112), so they are deleted explicitly, in the same transaction as the rows;
-- messages, events and streams go by cascade.
DELETE FROM workflow_input WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: delete_outputs
DELETE FROM workflow_output WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: delete_steps
DELETE FROM operation_outputs
WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: delete_workflows
DELETE FROM workflow_status WHERE workflow_uuid IN (SELECT value FROM json_each(:workflow_ids))

-- name: set_workflow_delay
UPDATE workflow_status
SET delay_until_epoch_ms = :delay_until, updated_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'DELAYED'

-- name: fork_original
-- Forking: what the fork copies from the original's row (no row: no such original).
SELECT ws.name, ws.class_name, ws.config_name, ws.application_id, ws.authenticated_user,
       ws.authenticated_roles, ws.assumed_role, ws.serialization, ws.attributes,
       COALESCE(ws.application_name, :application_name), COALESCE(wi.inputs, ws.inputs)
FROM workflow_status AS ws
LEFT JOIN workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = :original_id

-- name: fork_insert
-- The fork: a new ENQUEUED row with the original's function, format and owner (and a
-- version-less row by default, so the latest version picks it up). An existing fork id
-- fails on the primary key.
INSERT INTO workflow_status (
    workflow_uuid, status, name, class_name, config_name, application_id,
    authenticated_user, authenticated_roles, assumed_role, serialization, attributes,
    application_name, queue_name, queue_partition_key, application_version,
    forked_from, workflow_timeout_ms, recovery_attempts, priority, created_at, updated_at
) VALUES (
    :forked_id, 'ENQUEUED', :name, :class_name, :config_name, :application_id,
    :authenticated_user, :authenticated_roles, :assumed_role, :serialization, :attributes,
    :owner, :queue_name, :queue_partition_key, :application_version,
    :original_id, :timeout_ms, 0, 0, :now, :now
)

-- name: fork_inputs
INSERT INTO workflow_input (workflow_uuid, inputs, retention_timestamp)
VALUES (:forked_id, :inputs, :now)

-- name: fork_mark
UPDATE workflow_status SET was_forked_from = TRUE WHERE workflow_uuid = :original_id

-- name: fork_steps
-- The checkpoints before start_step, so the fork re-runs from start_step on.
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, child_workflow_id,
    started_at_epoch_ms, completed_at_epoch_ms, serialization, application_name,
    retention_timestamp
)
SELECT :forked_id, function_id, function_name, output, error, child_workflow_id,
       started_at_epoch_ms, completed_at_epoch_ms, serialization, :owner, :now
FROM operation_outputs
WHERE workflow_uuid = :original_id AND function_id < :start_step

-- name: fork_history
INSERT INTO workflow_events_history (workflow_uuid, function_id, key, value, serialization)
SELECT :forked_id, function_id, key, value, serialization
FROM workflow_events_history
WHERE workflow_uuid = :original_id AND function_id < :start_step

-- name: fork_events
-- The latest value of each key as of start_step: the history row with the highest step id.
INSERT INTO workflow_events (workflow_uuid, key, value, serialization)
SELECT :forked_id, key, value, serialization FROM (
    SELECT key, value, serialization,
           row_number() OVER (PARTITION BY key ORDER BY function_id DESC) AS newest
    FROM workflow_events_history
    WHERE workflow_uuid = :original_id AND function_id < :start_step
)
WHERE newest = 1

-- name: fork_streams
INSERT INTO streams (workflow_uuid, key, value, "offset", function_id, serialization)
SELECT :forked_id, key, value, "offset", function_id, serialization
FROM streams
WHERE workflow_uuid = :original_id AND function_id < :start_step
