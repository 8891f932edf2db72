-- The SQLite backend's statements: recovery, queues, claims and the timeout sweep.
-- (Conventions: see lifecycle.sql.)
--
-- SQLite uses a partial index only when the query's WHERE repeats the index's own terms
-- (it does not infer that status = 'ENQUEUED' implies status IN ('ENQUEUED', 'PENDING')),
-- so the queue statements spell out the in-flight and rate-limited indexes' conditions;
-- without them every poll and claim scanned the whole table.

-- name: has_due_delayed
-- Whether release_delayed has anything to do: looked at without the write lock, so an idle
-- executor's sweeps never take it (other processes' writers would queue behind them).
SELECT EXISTS (
    SELECT 1 FROM workflow_status
    WHERE status = 'DELAYED' AND (delay_until_epoch_ms <= :now OR delay_until_epoch_ms IS NULL)
      AND (application_name = :application_name OR application_name IS NULL)
)

-- name: list_partitions
-- Distinct partition keys with ENQUEUED rows (SQLite's planner skips through the
-- partition dequeue index on its own; PostgreSQL needs a recursive loose index scan).
SELECT DISTINCT queue_partition_key FROM workflow_status
WHERE queue_name = :queue_name AND status = 'ENQUEUED' AND status IN ('ENQUEUED', 'PENDING')
  AND queue_partition_key IS NOT NULL
ORDER BY queue_partition_key

-- name: count_recent_starts
-- Rate limit: dispatches of the queue counted by the limiter that started inside the
-- window (finished ones included), of this application or unclaimed. With a partition
-- key, only that partition's.
SELECT count(*) FROM workflow_status
WHERE queue_name = :queue_name AND rate_limited = TRUE
  AND status NOT IN ('ENQUEUED', 'DELAYED')
  AND started_at_epoch_ms > :now - :period_ms
  AND (application_name = :application_name OR application_name IS NULL)
  AND (:partition_key IS NULL OR queue_partition_key = :partition_key)

-- name: count_running
-- Concurrency: PENDING rows of the queue across every executor, of this application or
-- unclaimed. With a partition key, only that partition's.
SELECT count(*) FROM workflow_status
WHERE queue_name = :queue_name AND status = 'PENDING' AND status IN ('ENQUEUED', 'PENDING')
  AND (application_name = :application_name OR application_name IS NULL)
  AND (:partition_key IS NULL OR queue_partition_key = :partition_key)

-- name: count_turns
-- Turn-taking under a global limit (see request_turn): the turns other executors wait on,
-- how many other executors share the queue (running or waiting), and how many of its
-- workflows this one runs. Turns are taken at the head of the queue, so only its first
-- :turn_head rows are looked at.
SELECT count(*) FILTER (WHERE waiting AND executor_id IS NOT :executor_id),
       count(DISTINCT executor_id) FILTER (WHERE executor_id <> :executor_id),
       count(*) FILTER (WHERE NOT waiting AND executor_id = :executor_id)
FROM (
    SELECT executor_id, FALSE AS waiting FROM workflow_status
    WHERE queue_name = :queue_name AND status = 'PENDING' AND status IN ('ENQUEUED', 'PENDING')
      AND (application_name = :application_name OR application_name IS NULL)
    UNION ALL
    SELECT head.executor_id, TRUE FROM (
        SELECT executor_id, owner_xid, started_at_epoch_ms FROM workflow_status
        WHERE queue_name = :queue_name AND status = 'ENQUEUED'
          AND status IN ('ENQUEUED', 'PENDING')
          AND (application_name = :application_name OR application_name IS NULL)
        ORDER BY priority ASC, created_at ASC, rowid ASC
        LIMIT :turn_head
    ) AS head
    WHERE head.owner_xid = :turn_token AND head.started_at_epoch_ms > :now - :turn_window_ms
)

-- name: request_turn
-- Turn-taking under a global limit: mark the head row this executor could run as the turn
-- it waits for, or renew the turn it has, if it runs fewer than its fair share of the
-- limit (the PostgreSQL statement of the same name says why and how). The write lock
-- makes the counts and the mark one step.
UPDATE workflow_status
SET owner_xid = :turn_token, executor_id = :executor_id, started_at_epoch_ms = :now
WHERE status = 'ENQUEUED' AND workflow_uuid = COALESCE(
    (SELECT head.workflow_uuid FROM (
         SELECT workflow_uuid, executor_id, owner_xid FROM workflow_status
         WHERE queue_name = :queue_name AND status = 'ENQUEUED'
           AND status IN ('ENQUEUED', 'PENDING')
           AND (application_name = :application_name OR application_name IS NULL)
         ORDER BY priority ASC, created_at ASC, rowid ASC
         LIMIT :turn_head
     ) AS head
     WHERE head.owner_xid = :turn_token AND head.executor_id = :executor_id
     LIMIT 1),
    (SELECT workflow_uuid FROM workflow_status
     WHERE queue_name = :queue_name AND status = 'ENQUEUED'
       AND status IN ('ENQUEUED', 'PENDING')
       AND (application_version = :application_version
            OR (:runs_latest_version AND application_version IS NULL))
       AND (application_name = :application_name OR application_name IS NULL)
       AND name IN (SELECT value FROM json_each(:workflow_names))
       AND (owner_xid IS NOT :turn_token OR started_at_epoch_ms IS NULL
            OR started_at_epoch_ms <= :now - :turn_window_ms)
     ORDER BY priority ASC, created_at ASC, rowid ASC
     LIMIT 1))
  AND (SELECT count(*) FROM workflow_status
       WHERE queue_name = :queue_name AND status = 'PENDING'
         AND status IN ('ENQUEUED', 'PENDING') AND executor_id = :executor_id
         AND (application_name = :application_name OR application_name IS NULL))
      < (SELECT (:global_concurrency + others) / (others + 1) FROM (
             SELECT count(DISTINCT executor_id) AS others FROM workflow_status
             WHERE queue_name = :queue_name AND status = 'PENDING'
               AND status IN ('ENQUEUED', 'PENDING') AND executor_id <> :executor_id
               AND (application_name = :application_name OR application_name IS NULL)))

-- name: has_claimable
-- Whether a claim could take anything (the claim's own candidate filter, no budgets),
-- looked at without the write lock: an idle queue's polls never take it.
SELECT EXISTS (
    SELECT 1 FROM workflow_status
    WHERE queue_name = :queue_name AND status = 'ENQUEUED' AND status IN ('ENQUEUED', 'PENDING')
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
    rate_limited = :rate_limited, recovery_attempts = COALESCE(recovery_attempts, 0) + 1,
    updated_at = :now,
    workflow_deadline_epoch_ms = CASE
        WHEN workflow_timeout_ms IS NOT NULL AND workflow_deadline_epoch_ms IS NULL
        THEN :now + workflow_timeout_ms
        ELSE workflow_deadline_epoch_ms END
WHERE status = 'ENQUEUED' AND workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE queue_name = :queue_name AND status = 'ENQUEUED' AND status IN ('ENQUEUED', 'PENDING')
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
