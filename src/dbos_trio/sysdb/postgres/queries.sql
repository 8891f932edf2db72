-- Every SQL statement the PostgreSQL backend issues, by name.
--
-- A block starts with a line "-- name: <name>"; the comment lines after it say what the
-- statement is for. "{schema}" is replaced by the quoted schema name when loaded.
-- Parameters use psycopg's named style, so a literal percent sign is written "%%".
-- Times are passed in from the engine's clock, never read with now(), so a MockClock
-- drives them (see _clock.py).

-- name: init_workflow
-- Create a workflow row and its inputs, or return the existing row untouched, in one
-- round trip. The no-op DO UPDATE makes an existing row come back; "created" tells the
-- two cases apart by the creator token. The outcome comes along for a finished row so a
-- repeated call returns without a second query.
WITH inserted AS (
    INSERT INTO {schema}.workflow_status AS ws (
        workflow_uuid, status, name, class_name, config_name,
        authenticated_user, authenticated_roles, executor_id,
        created_at, updated_at, application_version, application_id, application_name,
        recovery_attempts, queue_name, workflow_timeout_ms, workflow_deadline_epoch_ms,
        deduplication_id, priority, queue_partition_key, parent_workflow_id,
        serialization, delay_until_epoch_ms, owner_xid, creator_xid, forked_from
    ) VALUES (
        %(workflow_id)s, %(status)s, %(name)s, %(class_name)s, %(config_name)s,
        %(authenticated_user)s, %(authenticated_roles)s, %(executor_id)s,
        %(created_at)s, %(created_at)s, %(application_version)s, %(application_id)s,
        %(application_name)s, %(recovery_attempts)s, %(queue_name)s, %(timeout_ms)s,
        %(deadline_epoch_ms)s, %(deduplication_id)s, %(priority)s, %(queue_partition_key)s,
        %(parent_workflow_id)s, %(serialization)s, %(delay_until_epoch_ms)s, %(owner_xid)s,
        %(creator_xid)s, %(forked_from)s
    )
    ON CONFLICT (workflow_uuid) DO UPDATE SET updated_at = ws.updated_at
    RETURNING workflow_uuid, creator_xid, status, name, class_name, config_name, queue_name,
              serialization, workflow_deadline_epoch_ms, output, error
), stored_inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
    SELECT workflow_uuid, %(inputs)s FROM inserted WHERE creator_xid = %(creator_xid)s
    ON CONFLICT (workflow_uuid) DO NOTHING
)
SELECT inserted.creator_xid IS NOT DISTINCT FROM %(creator_xid)s, inserted.status,
       inserted.name, inserted.class_name, inserted.config_name, inserted.queue_name,
       inserted.serialization, inserted.workflow_deadline_epoch_ms,
       COALESCE(wo.output, inserted.output), COALESCE(wo.error, inserted.error),
       NULL::text
FROM inserted
LEFT JOIN {schema}.workflow_output AS wo ON wo.workflow_uuid = inserted.workflow_uuid

-- name: init_child_workflow
-- init_workflow for a child started from a workflow body: the parent's checkpoint (step
-- id, child's name, child id) is written in the same statement, and nothing at all is
-- written unless the parent's execution still owns the parent (row lock + token check).
-- The last column is the child id the parent's checkpoint holds after the statement.
WITH parent AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(parent_id)s AND owner_xid = %(parent_owner_xid)s
    FOR NO KEY UPDATE
), inserted AS (
    INSERT INTO {schema}.workflow_status AS ws (
        workflow_uuid, status, name, class_name, config_name,
        authenticated_user, authenticated_roles, executor_id,
        created_at, updated_at, application_version, application_id, application_name,
        recovery_attempts, queue_name, workflow_timeout_ms, workflow_deadline_epoch_ms,
        deduplication_id, priority, queue_partition_key, parent_workflow_id,
        serialization, delay_until_epoch_ms, owner_xid, creator_xid, forked_from
    )
    SELECT
        %(workflow_id)s, %(status)s, %(name)s, %(class_name)s, %(config_name)s,
        %(authenticated_user)s, %(authenticated_roles)s, %(executor_id)s,
        %(created_at)s, %(created_at)s, %(application_version)s, %(application_id)s,
        %(application_name)s, %(recovery_attempts)s, %(queue_name)s, %(timeout_ms)s,
        %(deadline_epoch_ms)s, %(deduplication_id)s, %(priority)s, %(queue_partition_key)s,
        %(parent_workflow_id)s, %(serialization)s, %(delay_until_epoch_ms)s, %(owner_xid)s,
        %(creator_xid)s, %(forked_from)s
    FROM parent
    ON CONFLICT (workflow_uuid) DO UPDATE SET updated_at = ws.updated_at
    RETURNING workflow_uuid, creator_xid, status, name, class_name, config_name, queue_name,
              serialization, workflow_deadline_epoch_ms, output, error
), stored_inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
    SELECT workflow_uuid, %(inputs)s FROM inserted WHERE creator_xid = %(creator_xid)s
    ON CONFLICT (workflow_uuid) DO NOTHING
), checkpoint AS (
    INSERT INTO {schema}.operation_outputs (
        workflow_uuid, function_id, function_name, child_workflow_id,
        started_at_epoch_ms, completed_at_epoch_ms, application_name
    )
    SELECT workflow_uuid, %(parent_function_id)s, %(parent_function_name)s, %(workflow_id)s,
           %(parent_started_at)s, %(created_at)s, %(parent_application_name)s
    FROM parent
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
    RETURNING child_workflow_id
)
SELECT inserted.creator_xid IS NOT DISTINCT FROM %(creator_xid)s, inserted.status,
       inserted.name, inserted.class_name, inserted.config_name, inserted.queue_name,
       inserted.serialization, inserted.workflow_deadline_epoch_ms,
       COALESCE(wo.output, inserted.output), COALESCE(wo.error, inserted.error),
       COALESCE(
           (SELECT child_workflow_id FROM checkpoint),
           (SELECT child_workflow_id FROM {schema}.operation_outputs
            WHERE workflow_uuid = %(parent_id)s AND function_id = %(parent_function_id)s)
       )
FROM inserted
LEFT JOIN {schema}.workflow_output AS wo ON wo.workflow_uuid = inserted.workflow_uuid

-- name: record_step
-- Record one step outcome, fenced: the row lock on the workflow serializes this insert
-- against a cancel or a re-claim changing owner_xid, so a stale execution writes nothing.
-- No row back means "not recorded"; diagnose_step_write says why.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
)
INSERT INTO {schema}.operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms, application_name
)
SELECT workflow_uuid, %(function_id)s, %(function_name)s, %(output)s, %(error)s,
       %(serialization)s, %(child_workflow_id)s, %(started_at)s, %(completed_at)s,
       %(application_name)s
FROM owner
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
RETURNING 1

-- name: diagnose_step_write
-- Why record_step wrote nothing: the workflow's status and owner, and what is already
-- recorded at that step id.
SELECT ws.status, ws.owner_xid IS NOT DISTINCT FROM %(owner_xid)s,
       oo.function_name, oo.completed_at_epoch_ms, oo.output, oo.error
FROM (SELECT 1) AS one
LEFT JOIN {schema}.workflow_status AS ws ON ws.workflow_uuid = %(workflow_id)s
LEFT JOIN {schema}.operation_outputs AS oo
       ON oo.workflow_uuid = %(workflow_id)s AND oo.function_id = %(function_id)s

-- name: load_steps
-- All checkpoints of one workflow, for replay (loaded once per execution).
SELECT function_id, function_name, output, error, serialization, child_workflow_id,
       started_at_epoch_ms, completed_at_epoch_ms
FROM {schema}.operation_outputs
WHERE workflow_uuid = %(workflow_id)s
ORDER BY function_id

-- name: record_outcome
-- The workflow's final status and payload, in one autocommit statement, only while it
-- is PENDING and still ours; the count says whether we won.
WITH updated AS (
    UPDATE {schema}.workflow_status
    SET status = %(status)s, deduplication_id = NULL, owner_xid = NULL,
        updated_at = %(completed_at)s, completed_at = %(completed_at)s
    WHERE workflow_uuid = %(workflow_id)s AND status = 'PENDING' AND owner_xid = %(owner_xid)s
    RETURNING workflow_uuid
), stored AS (
    INSERT INTO {schema}.workflow_output (workflow_uuid, output, error)
    SELECT workflow_uuid, %(output)s, %(error)s FROM updated
    ON CONFLICT (workflow_uuid) DO UPDATE SET output = excluded.output, error = excluded.error
)
SELECT count(*) FROM updated

-- name: get_outcome
-- Status and stored outcome (new payload table first, legacy columns as fallback).
SELECT ws.status, COALESCE(wo.output, ws.output), COALESCE(wo.error, ws.error),
       ws.serialization
FROM {schema}.workflow_status AS ws
LEFT JOIN {schema}.workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid
WHERE ws.workflow_uuid = %(workflow_id)s

-- name: claim_unowned_version
-- Launch: adopt a version row written by a nameless (unclaimed) writer.
UPDATE {schema}.application_versions SET application_name = %(application_name)s
WHERE version_name = %(version)s AND application_name IS NULL

-- name: insert_version
INSERT INTO {schema}.application_versions (version_id, version_name, application_name)
VALUES (%(version_id)s, %(version)s, %(application_name)s)
ON CONFLICT DO NOTHING

-- name: version_owner
SELECT application_name FROM {schema}.application_versions WHERE version_name = %(version)s

-- name: latest_version
-- The newest version of this application (or unclaimed): the one that may run version-less
-- queued rows.
SELECT version_name FROM {schema}.application_versions
WHERE application_name = %(application_name)s OR application_name IS NULL
ORDER BY version_timestamp DESC
LIMIT 1

-- name: cancel_workflows
-- Cancel whatever is not finished. Clearing owner_xid is what stops an execution running
-- elsewhere: its next fenced write finds it no longer owns the row.
UPDATE {schema}.workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = %(now)s, completed_at = %(now)s
WHERE workflow_uuid = ANY(%(workflow_ids)s) AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

-- name: list_children
SELECT workflow_uuid FROM {schema}.workflow_status WHERE parent_workflow_id = ANY(%(workflow_ids)s)

-- name: find_deduplicated
-- The workflow holding a deduplication id on a queue (the id is cleared when it finishes).
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE queue_name = %(queue_name)s AND deduplication_id = %(deduplication_id)s

-- name: reenqueue_abandoned
-- Launch-time recovery, one write: this executor's (same id, same version) PENDING rows,
-- of this application or unclaimed, go back to their queue or the internal queue. The
-- next claim counts the attempt and re-stamps the executor, so repeating this is harmless.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = %(now)s,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE status = 'PENDING' AND executor_id = %(executor_id)s
  AND application_version = %(application_version)s
  AND (application_name = %(application_name)s OR application_name IS NULL)

-- name: requeue_workflow
-- Hand a PENDING workflow from its owning execution back to its queue (or the internal
-- queue), e.g. a direct child whose parent was cancelled around it: someone dequeues it
-- and it continues after its last checkpoint. Only its owner may do this.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = %(now)s,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE workflow_uuid = %(workflow_id)s AND status = 'PENDING' AND owner_xid = %(owner_xid)s

-- name: release_delayed
-- DELAYED rows whose time has come become ENQUEUED (a debounced row frees its dedup id).
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', updated_at = %(now)s,
    deduplication_id = CASE WHEN is_debounced THEN NULL ELSE deduplication_id END
WHERE status = 'DELAYED' AND delay_until_epoch_ms <= %(now)s
  AND (application_name = %(application_name)s OR application_name IS NULL)

-- name: upsert_queue
-- Register a queue: insert, or overwrite the configuration when allowed and the row is
-- ours or unclaimed (claiming it). A foreign owner's row is left as it is.
INSERT INTO {schema}.queues AS q (
    name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
    priority_enabled, partition_queue, polling_interval_sec, created_at, updated_at,
    application_name, partition_concurrency, partition_worker_concurrency,
    partition_rate_limit_max, partition_rate_limit_period_sec
) VALUES (
    %(name)s, %(concurrency)s, %(worker_concurrency)s, %(rate_limit_max)s,
    %(rate_limit_period_sec)s, TRUE, %(partitioned)s, %(polling_interval_sec)s,
    (EXTRACT(epoch FROM now()) * 1000)::bigint, (EXTRACT(epoch FROM now()) * 1000)::bigint,
    %(application_name)s, %(partition_concurrency)s,
    %(partition_worker_concurrency)s, %(partition_rate_limit_max)s,
    %(partition_rate_limit_period_sec)s
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
WHERE %(overwrite)s
  AND (q.application_name IS NULL OR q.application_name = excluded.application_name)

-- name: queue_owner
SELECT application_name FROM {schema}.queues WHERE name = %(name)s

-- name: list_queues
-- Queue rows visible to an application: its own and unclaimed ones (all when no name).
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM {schema}.queues
WHERE %(application_name)s::text IS NULL OR application_name = %(application_name)s
   OR application_name IS NULL
ORDER BY name

-- name: get_queue
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM {schema}.queues
WHERE name = %(name)s

-- name: delete_queue
DELETE FROM {schema}.queues WHERE name = %(name)s

-- name: list_partitions
-- Distinct partition keys with ENQUEUED rows, by a loose index scan (one index seek per
-- key instead of reading every queued row).
WITH RECURSIVE partition_keys AS (
    (SELECT queue_partition_key AS key FROM {schema}.workflow_status
     WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
       AND queue_partition_key IS NOT NULL
     ORDER BY queue_partition_key LIMIT 1)
    UNION ALL
    SELECT (SELECT queue_partition_key FROM {schema}.workflow_status
            WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
              AND queue_partition_key > partition_keys.key
            ORDER BY queue_partition_key LIMIT 1)
    FROM partition_keys WHERE partition_keys.key IS NOT NULL
)
SELECT key FROM partition_keys WHERE key IS NOT NULL

-- name: claim
-- Dequeue: claim the head of the queue (or of one partition) for this executor, in one
-- statement. The budget is computed in the statement from the rows it is about to lock:
-- the local worker budget (passed in), the rate limit (starts in the window, finished ones
-- included) and the concurrency caps (PENDING rows of every executor); a NULL limit does
-- not apply. {lock} is SKIP LOCKED when no budget is shared (READ COMMITTED) and NOWAIT
-- when one is (the caller runs it in REPEATABLE READ, so two executors cannot both spend
-- the same budget: the second conflicts and backs off; in SERIALIZABLE when one partition's
-- claim also spends a queue-wide budget, which rows of other partitions never lock).
-- {partition} narrows every part to one partition for partitioned queues. The attempt is
-- counted here, the deadline armed from the timeout, and the inputs come back with the
-- claimed rows. The budget is MATERIALIZED so its counts run once (inlined, the LIMIT
-- expression evaluated each of them twice), and the claimed ids reach the UPDATE as an
-- array so it looks them up by primary key: joined to the CTE, the planner hashed the
-- whole table (a sequential scan of workflow_status and workflow_input on every poll)
-- once a queue had a large backlog.
-- Each claimed row's checkpoints come back too (as JSON, oldest first), which saves the
-- execution a load_steps read, but only when the row this statement locked is the
-- version its snapshot saw (same xmin). Otherwise a claim, run and re-enqueue by another
-- executor committed in between and its checkpoints may be invisible to this snapshot:
-- then the column is NULL and the execution reads them after the claim.
WITH recent_starts AS (
    SELECT count(*) AS n FROM {schema}.workflow_status
    WHERE %(rate_limit_max)s::int IS NOT NULL AND queue_name = %(queue_name)s AND rate_limited
      AND status NOT IN ('ENQUEUED', 'DELAYED')
      AND started_at_epoch_ms > %(now)s - %(rate_limit_period_ms)s
      AND (application_name = %(application_name)s OR application_name IS NULL)
), running AS (
    SELECT count(*) AS n FROM {schema}.workflow_status
    WHERE %(global_concurrency)s::int IS NOT NULL AND queue_name = %(queue_name)s
      AND status = 'PENDING'
      AND (application_name = %(application_name)s OR application_name IS NULL)
), partition_recent_starts AS (
    SELECT count(*) AS n FROM {schema}.workflow_status
    WHERE %(partition_rate_limit_max)s::int IS NOT NULL AND queue_name = %(queue_name)s
      AND rate_limited AND status NOT IN ('ENQUEUED', 'DELAYED')
      AND started_at_epoch_ms > %(now)s - %(partition_rate_limit_period_ms)s
      AND (application_name = %(application_name)s OR application_name IS NULL)
      {partition}
), partition_running AS (
    SELECT count(*) AS n FROM {schema}.workflow_status
    WHERE %(partition_concurrency)s::int IS NOT NULL AND queue_name = %(queue_name)s
      AND status = 'PENDING'
      AND (application_name = %(application_name)s OR application_name IS NULL)
      {partition}
), budget AS MATERIALIZED (
    SELECT LEAST(
        %(local_budget)s::int,
        %(rate_limit_max)s::int - (SELECT n FROM recent_starts),
        %(global_concurrency)s::int - (SELECT n FROM running),
        %(partition_rate_limit_max)s::int - (SELECT n FROM partition_recent_starts),
        %(partition_concurrency)s::int - (SELECT n FROM partition_running)
    ) AS n
), candidates AS (
    SELECT workflow_uuid, xmin AS locked_version FROM {schema}.workflow_status
    WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
      AND (application_version = %(application_version)s
           OR (%(runs_latest_version)s AND application_version IS NULL))
      AND (application_name = %(application_name)s OR application_name IS NULL)
      AND name = ANY(%(workflow_names)s)
      {partition}
    ORDER BY priority ASC, created_at ASC
    LIMIT (SELECT CASE WHEN n IS NULL THEN NULL ELSE GREATEST(n, 0) END FROM budget)
    FOR UPDATE {lock}
), stale AS (
    -- Claimed rows whose locked version is not the one this snapshot sees (a plain read,
    -- one primary-key lookup per row).
    SELECT COALESCE(array_agg(c.workflow_uuid), '{}') AS ids FROM candidates AS c
    WHERE c.locked_version <> (SELECT seen.xmin FROM {schema}.workflow_status AS seen
                               WHERE seen.workflow_uuid = c.workflow_uuid)
)
UPDATE {schema}.workflow_status AS ws
SET status = 'PENDING', owner_xid = %(owner_xid)s,
    application_version = %(application_version)s, executor_id = %(executor_id)s,
    application_name = %(application_name)s, started_at_epoch_ms = %(now)s,
    rate_limited = %(rate_limited)s, recovery_attempts = ws.recovery_attempts + 1,
    updated_at = %(now)s,
    workflow_deadline_epoch_ms = CASE
        WHEN ws.workflow_timeout_ms IS NOT NULL AND ws.workflow_deadline_epoch_ms IS NULL
        THEN %(now)s + ws.workflow_timeout_ms
        ELSE ws.workflow_deadline_epoch_ms END
WHERE ws.workflow_uuid = ANY(ARRAY(SELECT workflow_uuid FROM candidates))
  AND ws.status = 'ENQUEUED'
RETURNING ws.workflow_uuid, ws.name, ws.class_name, ws.config_name,
          COALESCE((SELECT wi.inputs FROM {schema}.workflow_input AS wi
                    WHERE wi.workflow_uuid = ws.workflow_uuid), ws.inputs),
          ws.serialization, ws.workflow_deadline_epoch_ms,
          ws.recovery_attempts, ws.queue_name, ws.queue_partition_key, ws.priority,
          ws.created_at,
          CASE WHEN ws.workflow_uuid <> ALL((SELECT ids FROM stale)::text[]) THEN COALESCE(
              (SELECT json_agg(json_build_array(
                          oo.function_id, oo.function_name, oo.output, oo.error,
                          oo.serialization, oo.child_workflow_id,
                          oo.started_at_epoch_ms, oo.completed_at_epoch_ms)
                      ORDER BY oo.function_id)
               FROM {schema}.operation_outputs AS oo
               WHERE oo.workflow_uuid = ws.workflow_uuid),
              '[]'::json) END

-- name: dead_letter
-- Park a workflow dispatched more often than its max_recovery_attempts allows.
UPDATE {schema}.workflow_status
SET status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', owner_xid = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, queue_name = NULL, updated_at = %(now)s, completed_at = %(now)s
WHERE workflow_uuid = %(workflow_id)s AND status = 'PENDING'
  AND recovery_attempts >= %(observed_attempts)s

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

-- name: has_message
-- Whether an unconsumed message waits on (destination, topic): the cheap look a waiting
-- receiver takes before paying for a consume.
SELECT EXISTS (
    SELECT 1 FROM {schema}.notifications
    WHERE destination_uuid = %(workflow_id)s AND topic = %(topic)s AND NOT consumed
)

-- name: consume_message
-- Receive: mark the oldest unconsumed message on the topic consumed (by this step id) and
-- record it as the DBOS.recv checkpoint, in one fenced statement. Messages are marked,
-- never deleted (a rewind can un-consume them). Nothing comes back when there is no
-- message; "owned" says whether the fence held.
WITH owner AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE workflow_uuid = %(workflow_id)s AND owner_xid = %(owner_xid)s
    FOR NO KEY UPDATE
), oldest AS (
    SELECT message_uuid FROM {schema}.notifications
    WHERE destination_uuid = %(workflow_id)s AND topic = %(topic)s AND NOT consumed
      AND EXISTS (SELECT 1 FROM owner)
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
SELECT (SELECT count(*) FROM owner), consumed.message, consumed.serialization
FROM (SELECT 1) AS one LEFT JOIN consumed ON TRUE

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

-- name: get_event
SELECT value, serialization FROM {schema}.workflow_events
WHERE workflow_uuid = %(workflow_id)s AND key = %(key)s

-- name: write_stream
-- Append to a stream at the next offset (from 0) and (from a workflow) record the
-- DBOS.writeStream/closeStream checkpoint, in one fenced statement. A concurrent writer
-- may take the same offset first: the primary key rejects it and the caller retries.
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

-- name: read_stream
-- Up to a batch of stream values from an offset, with the writer's status in the same
-- round trip (no status: the writer does not exist).
SELECT ws.status, s."offset", s.value, s.serialization
FROM {schema}.workflow_status AS ws
LEFT JOIN {schema}.streams AS s
       ON s.workflow_uuid = ws.workflow_uuid AND s.key = %(key)s
      AND s."offset" >= %(offset)s AND s."offset" < %(offset)s + %(limit)s
WHERE ws.workflow_uuid = %(workflow_id)s
ORDER BY s."offset"

-- name: try_timeout_sweep_lock
-- One executor per application sweeps timeouts at a time: a transaction-scoped advisory
-- lock keyed by schema and application, released when the sweep's transaction ends.
SELECT pg_try_advisory_xact_lock(%(lock_key)s)

-- name: sweep_timeouts
-- Cancel workflows of this application (or unclaimed) whose deadline has passed.
UPDATE {schema}.workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = %(now)s, completed_at = %(now)s
WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')
      AND workflow_deadline_epoch_ms IS NOT NULL AND workflow_deadline_epoch_ms <= %(now)s
      AND (application_name = %(application_name)s OR application_name IS NULL)
    ORDER BY workflow_deadline_epoch_ms
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
)
RETURNING workflow_uuid

-- name: existing_workflows
SELECT workflow_uuid FROM {schema}.workflow_status WHERE workflow_uuid = ANY(%(workflow_ids)s)

-- name: resume_workflows
-- Re-enqueue unfinished workflows (attempts reset, deadline re-armed at dequeue); their
-- checkpoints stay, so the re-run skips completed steps.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL,
    queue_name = COALESCE(%(queue_name)s, '_dbos_internal_queue'), recovery_attempts = 0,
    workflow_deadline_epoch_ms = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL,
    updated_at = %(now)s, completed_at = NULL
WHERE workflow_uuid = ANY(%(workflow_ids)s) AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

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

-- name: set_workflow_delay
UPDATE {schema}.workflow_status
SET delay_until_epoch_ms = %(delay_until)s, updated_at = %(now)s
WHERE workflow_uuid = %(workflow_id)s AND status = 'DELAYED'

-- name: notify_batch
-- One NOTIFY per payload of a coalesced batch, in one statement per channel.
SELECT pg_notify(%(channel)s, payload) FROM unnest(%(payloads)s::text[]) AS payload

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
    SELECT %(forked_id)s, function_id, function_name, output, error, child_workflow_id,
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
