-- The PostgreSQL backend's statements: recovery, queues, claims and the timeout sweep.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

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
          ws.created_at, 0,
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
