-- The PostgreSQL backend's statements: recovery, queues, claims and the timeout sweep.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

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
), turns AS (
    -- Turn-taking under a global limit (see request_turn), only when the caller asks for
    -- it: the turns other executors wait on, how many other executors share the queue
    -- (running or waiting), and how many of its workflows this one runs. Turns are taken
    -- at the head of the queue, so only its first TURN_HEAD rows are looked at: an index
    -- range, however long the backlog.
    SELECT count(*) FILTER (WHERE waiting AND executor_id IS DISTINCT FROM %(executor_id)s)
               AS waiting,
           count(DISTINCT executor_id) FILTER (WHERE executor_id <> %(executor_id)s) AS others,
           count(*) FILTER (WHERE NOT waiting AND executor_id = %(executor_id)s) AS mine
    FROM (
        SELECT executor_id, FALSE AS waiting FROM {schema}.workflow_status
        WHERE %(turn_window_ms)s::bigint IS NOT NULL AND queue_name = %(queue_name)s
          AND status = 'PENDING'
          AND (application_name = %(application_name)s OR application_name IS NULL)
        UNION ALL
        SELECT head.executor_id, TRUE FROM (
            SELECT executor_id, owner_xid, started_at_epoch_ms FROM {schema}.workflow_status
            WHERE %(turn_window_ms)s::bigint IS NOT NULL AND queue_name = %(queue_name)s
              AND status = 'ENQUEUED'
              AND (application_name = %(application_name)s OR application_name IS NULL)
            ORDER BY priority ASC, created_at ASC
            LIMIT %(turn_head)s
        ) AS head
        WHERE head.owner_xid = %(turn_token)s
          AND head.started_at_epoch_ms > %(now)s - %(turn_window_ms)s::bigint
    ) AS sharing
), budget AS MATERIALIZED (
    SELECT LEAST(
        %(local_budget)s::int,
        %(rate_limit_max)s::int - (SELECT n FROM recent_starts),
        %(global_concurrency)s::int - (SELECT n FROM running),
        %(partition_rate_limit_max)s::int - (SELECT n FROM partition_recent_starts),
        %(partition_concurrency)s::int - (SELECT n FROM partition_running),
        -- While another executor waits for a turn, no more than a fair share of the
        -- global limit (rounded up) for this one.
        (SELECT CASE WHEN waiting > 0
                THEN (%(global_concurrency)s::int + others) / (others + 1) - mine END
         FROM turns)
    ) AS n
), candidates AS (
    SELECT workflow_uuid, xmin AS locked_version FROM {schema}.workflow_status
    WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
      AND (application_version = %(application_version)s
           OR (%(runs_latest_version)s AND application_version IS NULL))
      AND (application_name = %(application_name)s OR application_name IS NULL)
      AND name = ANY(%(workflow_names)s)
      {partition}
      -- A row another executor waits on as its turn is not skipped: every claim must lock
      -- the same head rows, so that two claims spending one budget conflict (NOWAIT) and
      -- the second backs off. Skipping it let two executors lock different rows and both
      -- spend the last slot. The fair-share cap above is what leaves the turn to its waiter.
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
    rate_limited = %(rate_limited)s, recovery_attempts = COALESCE(ws.recovery_attempts, 0) + 1,
    updated_at = %(now)s,
    workflow_deadline_epoch_ms = CASE
        WHEN ws.workflow_timeout_ms IS NOT NULL AND ws.workflow_deadline_epoch_ms IS NULL
        THEN %(now)s + ws.workflow_timeout_ms
        ELSE ws.workflow_deadline_epoch_ms END
WHERE ws.workflow_uuid = ANY(ARRAY(SELECT workflow_uuid FROM candidates))
  -- Spelled so that no status index qualifies (see record_outcomes): the rows are found
  -- by primary key. With "status = 'ENQUEUED'" a planner whose statistics predate the
  -- backlog read every ENQUEUED entry of the in-flight index through a bitmap (one claim
  -- of 16 rows read ~5,000 entries; a bitmap never marks dead entries, so they stay).
  AND COALESCE(ws.status, '') = 'ENQUEUED'
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

-- name: request_turn
-- Turn-taking under a global limit. An executor whose claim found the limit spent, while it
-- had free slots, asks for a turn: if it runs fewer than its fair share of the limit (the
-- limit divided among the executors sharing the queue, rounded up), it marks the head row
-- of the queue it could run as the turn it waits for (owner_xid = the turn token,
-- executor_id = its own id, started_at_epoch_ms = now), or renews the turn it already has.
-- The row stays ENQUEUED, so every SDK still sees it queued. Until the turn is taken or
-- goes stale, other executors' claims keep to their fair share (they still lock the same
-- head rows, so concurrent claims conflict as ever), so a slot freed by an executor over
-- its share is left for the waiter's next claim: without this, the executor
-- that frees a slot claims it again at once and a later executor can starve.
WITH sharing AS (
    SELECT count(DISTINCT executor_id) FILTER (WHERE executor_id <> %(executor_id)s) AS others,
           count(*) FILTER (WHERE executor_id = %(executor_id)s) AS mine
    FROM {schema}.workflow_status
    WHERE queue_name = %(queue_name)s AND status = 'PENDING'
      AND (application_name = %(application_name)s OR application_name IS NULL)
), my_turn AS (
    SELECT head.workflow_uuid FROM (
        SELECT workflow_uuid, executor_id, owner_xid FROM {schema}.workflow_status
        WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
          AND (application_name = %(application_name)s OR application_name IS NULL)
        ORDER BY priority ASC, created_at ASC
        LIMIT %(turn_head)s
    ) AS head
    WHERE head.owner_xid = %(turn_token)s AND head.executor_id = %(executor_id)s
    LIMIT 1
), next_row AS (
    SELECT workflow_uuid FROM {schema}.workflow_status
    WHERE queue_name = %(queue_name)s AND status = 'ENQUEUED'
      AND (application_version = %(application_version)s
           OR (%(runs_latest_version)s AND application_version IS NULL))
      AND (application_name = %(application_name)s OR application_name IS NULL)
      AND name = ANY(%(workflow_names)s)
      AND (owner_xid IS DISTINCT FROM %(turn_token)s
           OR started_at_epoch_ms IS NULL
           OR started_at_epoch_ms <= %(now)s - %(turn_window_ms)s::bigint)
    ORDER BY priority ASC, created_at ASC
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.workflow_status AS ws
SET owner_xid = %(turn_token)s, executor_id = %(executor_id)s, started_at_epoch_ms = %(now)s
WHERE ws.workflow_uuid = COALESCE((SELECT workflow_uuid FROM my_turn),
                                  (SELECT workflow_uuid FROM next_row))
  AND ws.status = 'ENQUEUED'
  AND (SELECT mine FROM sharing)
      < (%(global_concurrency)s::int + (SELECT others FROM sharing))
        / ((SELECT others FROM sharing) + 1)
RETURNING ws.workflow_uuid
