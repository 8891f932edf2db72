-- The SQLite backend's statements: recovery, queues, claims and the timeout sweep.
-- (Conventions: see lifecycle.sql.)

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
          queue_partition_key, priority, created_at, rowid, NULL

-- name: dead_letter
-- Park a workflow dispatched more often than its max_recovery_attempts allows.
UPDATE workflow_status
SET status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', owner_xid = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, queue_name = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'PENDING'
  AND recovery_attempts >= :observed_attempts

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
