-- Statements both backends run as written: recovery and queues.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table (the
-- quoted schema on PostgreSQL, "main" on SQLite); {in:<list parameter>} for membership
-- in a list; {now_ms} for the database's clock in epoch milliseconds.

-- name: reenqueue_abandoned
-- Launch-time recovery, one write: this executor's (same id, same version) PENDING rows,
-- of this application or unclaimed, go back to their queue or the internal queue. The
-- next claim counts the attempt and re-stamps the executor, so repeating this is harmless.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = :now,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE status = 'PENDING' AND executor_id = :executor_id
  AND application_version = :application_version
  AND (application_name = :application_name OR application_name IS NULL)

-- name: requeue_workflow
-- Hand a PENDING workflow from its owning execution back to its queue (or the internal
-- queue), e.g. a direct child whose parent was cancelled around it. Only its owner may.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = :now,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE workflow_uuid = :workflow_id AND status = 'PENDING' AND owner_xid = :owner_xid

-- name: release_delayed
-- DELAYED rows whose time has come become ENQUEUED (a debounced row frees its dedup id).
-- A DELAYED row without a time (written by another tool) is due: left alone it would
-- wait forever.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', updated_at = :now,
    deduplication_id = CASE WHEN is_debounced THEN NULL ELSE deduplication_id END
WHERE status = 'DELAYED' AND (delay_until_epoch_ms <= :now OR delay_until_epoch_ms IS NULL)
  AND (application_name = :application_name OR application_name IS NULL)

-- name: upsert_queue
-- Register a queue: insert, or overwrite the configuration when allowed and the row is
-- ours or unclaimed (claiming it). A foreign owner's row is left as it is.
INSERT INTO {schema}.queues AS q (
    name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
    priority_enabled, partition_queue, polling_interval_sec, created_at, updated_at,
    application_name, partition_concurrency, partition_worker_concurrency,
    partition_rate_limit_max, partition_rate_limit_period_sec
) VALUES (
    :name, :concurrency, :worker_concurrency, :rate_limit_max, :rate_limit_period_sec,
    TRUE, :partitioned, :polling_interval_sec,
    {now_ms}, {now_ms},
    :application_name, :partition_concurrency, :partition_worker_concurrency,
    :partition_rate_limit_max, :partition_rate_limit_period_sec
)
ON CONFLICT (name) DO UPDATE SET
    -- A paused queue (concurrency 0 or below, see pause_queue) stays paused: registering
    -- it at every launch must not let it claim again; the new limit is kept, negated.
    concurrency = CASE
        WHEN q.concurrency <= 0 AND (excluded.concurrency IS NULL OR excluded.concurrency > 0)
        THEN -COALESCE(excluded.concurrency, 0)
        ELSE excluded.concurrency
    END,
    worker_concurrency = excluded.worker_concurrency,
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
SELECT application_name FROM {schema}.queues WHERE name = :name

-- name: list_queues
-- Queue rows visible to an application: its own and unclaimed ones (all when no name).
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM {schema}.queues
WHERE CAST(:application_name AS TEXT) IS NULL OR application_name = :application_name
   OR application_name IS NULL
ORDER BY name

-- name: get_queue
SELECT name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
       partition_concurrency, partition_worker_concurrency, partition_rate_limit_max,
       partition_rate_limit_period_sec, polling_interval_sec, application_name
FROM {schema}.queues
WHERE name = :name

-- name: delete_queue
DELETE FROM {schema}.queues WHERE name = :name

-- name: pause_queue
-- Stop claims from a queue, durably and for every SDK: a global concurrency of 0 or less
-- admits nothing (dbos 3.4 claims at most concurrency - running). The limit it had is kept
-- negated (-N; 0 for none), so unpause_queue restores it. Running work goes on.
UPDATE {schema}.queues
SET concurrency = -COALESCE(concurrency, 0), updated_at = :now
WHERE name = :name AND (concurrency IS NULL OR concurrency > 0)

-- name: unpause_queue
-- Claims resume with the global concurrency the queue had before pause_queue.
UPDATE {schema}.queues
SET concurrency = NULLIF(-concurrency, 0), updated_at = :now
WHERE name = :name AND concurrency <= 0

-- name: dead_letter
-- Park a workflow dispatched more often than its max_recovery_attempts allows.
UPDATE {schema}.workflow_status
SET status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', owner_xid = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, queue_name = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'PENDING'
  AND recovery_attempts >= :observed_attempts

-- name: claimed_by_token
-- The rows one claim made ours (PENDING under its owner token): after a claim whose reply
-- was lost, these are what it claimed, found again instead of claimed twice. Columns as
-- the claims return them; the checkpoints are left for the execution to load.
SELECT ws.workflow_uuid, ws.name, ws.class_name, ws.config_name,
       COALESCE(wi.inputs, ws.inputs), ws.serialization, ws.workflow_deadline_epoch_ms,
       ws.recovery_attempts, ws.queue_name, ws.queue_partition_key, ws.priority,
       ws.created_at, 0, NULL
FROM {schema}.workflow_status AS ws
LEFT JOIN {schema}.workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid
WHERE ws.owner_xid = :owner_xid AND ws.status = 'PENDING' AND ws.queue_name = :queue_name

-- name: pending_of_executor
-- PENDING rows of one executor id and version (this application's or unclaimed) last
-- touched at or before a time, with their owner tokens: what the orphan sweep compares
-- with the workflows that run in this process (the partial index on PENDING serves it).
SELECT workflow_uuid, owner_xid FROM {schema}.workflow_status
WHERE status = 'PENDING' AND executor_id = :executor_id
  AND application_version = :application_version
  AND (application_name = :application_name OR application_name IS NULL)
  AND owner_xid IS NOT NULL AND updated_at <= :updated_before
