-- The PostgreSQL backend's statements: workflow rows, checkpoints and outcomes.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

-- name: init_workflow
-- Create a workflow row and its inputs, or return the existing row untouched, in one
-- round trip. The no-op DO UPDATE makes an existing row come back; "created" tells the
-- two cases apart by the creator token. The outcome comes along for a finished row so a
-- repeated call returns without a second query. With a notify_channel (the notifier's
-- leading edge, see postgres/notifier.py) a new ENQUEUED row also NOTIFYs its queue on
-- it, delivered at this statement's commit: a worker elsewhere hears of it without the
-- round trip of a separate push; the last column says whether it did. (A CTE is evaluated
-- only if read: the final SELECT reads it.)
WITH inserted AS (
    INSERT INTO {schema}.workflow_status AS ws ({new_workflow_columns})
    VALUES ({new_workflow_values})
    ON CONFLICT (workflow_uuid) DO UPDATE SET updated_at = ws.updated_at
    RETURNING workflow_uuid, creator_xid, status, name, class_name, config_name, queue_name,
              serialization, workflow_deadline_epoch_ms, output, error
), stored_inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
    SELECT workflow_uuid, %(inputs)s FROM inserted WHERE creator_xid = %(creator_xid)s
    ON CONFLICT (workflow_uuid) DO NOTHING
), notified AS (
    SELECT count(pg_notify(%(notify_channel)s::text, inserted.queue_name)) AS n FROM inserted
    WHERE %(notify_channel)s::text IS NOT NULL AND inserted.status = 'ENQUEUED'
      AND inserted.creator_xid = %(creator_xid)s AND inserted.queue_name IS NOT NULL
)
SELECT inserted.creator_xid IS NOT DISTINCT FROM %(creator_xid)s, inserted.status,
       inserted.name, inserted.class_name, inserted.config_name, inserted.queue_name,
       inserted.serialization, inserted.workflow_deadline_epoch_ms,
       COALESCE(wo.output, inserted.output), COALESCE(wo.error, inserted.error),
       NULL::text, notified.n > 0
FROM inserted
CROSS JOIN notified
LEFT JOIN {schema}.workflow_output AS wo ON wo.workflow_uuid = inserted.workflow_uuid

-- name: init_workflows
-- Group commit of starts (sysdb/group_commit.py): init_workflow for many new workflows in
-- one autocommit statement, each row exactly as init_workflow would make or find it. The
-- rows are inserted in id order (two batches lock existing rows alike, so cannot
-- deadlock); an id must not be twice in one batch (ON CONFLICT DO UPDATE cannot touch a
-- row twice: the caller writes repeats alone). Each row comes back with its id first, then
-- init_workflow's columns. The batch is a JSON array of the single starts' parameter
-- objects, as for record_steps.
WITH batch AS MATERIALIZED (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS b({new_workflow_record})
), inserted AS (
    INSERT INTO {schema}.workflow_status AS ws ({new_workflow_columns})
    SELECT {new_workflow_batch_values} FROM batch AS b ORDER BY b.workflow_id
    ON CONFLICT (workflow_uuid) DO UPDATE SET updated_at = ws.updated_at
    RETURNING workflow_uuid, creator_xid, status, name, class_name, config_name, queue_name,
              serialization, workflow_deadline_epoch_ms, output, error
), stored_inputs AS (
    INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
    SELECT i.workflow_uuid, b.inputs FROM inserted AS i
    JOIN batch AS b ON b.workflow_id = i.workflow_uuid AND b.creator_xid = i.creator_xid
    ON CONFLICT (workflow_uuid) DO NOTHING
)
SELECT i.workflow_uuid, i.creator_xid IS NOT DISTINCT FROM b.creator_xid, i.status,
       i.name, i.class_name, i.config_name, i.queue_name, i.serialization,
       i.workflow_deadline_epoch_ms, COALESCE(wo.output, i.output),
       COALESCE(wo.error, i.error), NULL::text
FROM inserted AS i
JOIN batch AS b ON b.workflow_id = i.workflow_uuid
-- Lateral, and LIMIT 1 so the planner keeps it so: one primary-key lookup per row (as a
-- plain join, it hashed a scan of the whole workflow_output for the batch's rows).
LEFT JOIN LATERAL (
    SELECT output, error FROM {schema}.workflow_output WHERE workflow_uuid = i.workflow_uuid
    LIMIT 1
) AS wo ON true

-- name: insert_new_workflows
-- A bulk enqueue's plain rows (sysdb/similar.py): new workflows alike but for their id and
-- inputs, in one autocommit statement. The shared columns come once (one JSON object), each
-- row as {"i": id, "x": inputs}. Plain INSERTs: no ON CONFLICT, no row locked, nothing
-- returned, so a row already there (a retry of this very statement after its reply was
-- lost, or an id the caller chose that exists) fails the statement as a whole with a
-- unique violation and writes nothing; the caller then writes the chunk through
-- init_workflows, which answers each row as init_workflow would. Rows go in in the batch's
-- order (they share created_at: the dequeue's ties fall in insertion order).
WITH shared AS MATERIALIZED (
    SELECT * FROM json_to_record(%(shared)s::json) AS s({similar_workflow_record})
), batch AS MATERIALIZED (
    SELECT * FROM json_to_recordset(%(rows)s::json) AS r(i text, x text)
), inserted AS (
    INSERT INTO {schema}.workflow_status ({new_workflow_columns})
    SELECT {similar_workflow_values} FROM batch AS r CROSS JOIN shared AS s
)
INSERT INTO {schema}.workflow_input (workflow_uuid, inputs)
SELECT r.i, r.x FROM batch AS r

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
    INSERT INTO {schema}.workflow_status AS ws ({new_workflow_columns})
    SELECT {new_workflow_values}
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

-- name: record_steps
-- Group commit (sysdb/group_commit.py): step outcomes of many workflows in one autocommit
-- statement, each row fenced as record_step fences one: inserted only while its workflow
-- is owned by its writer's owner_xid, under a lock on that workflow row. The locks are
-- taken in id order, so two batches cannot deadlock on each other. The (id, step) pairs
-- inserted come back; a missing one is "not recorded" and its writer diagnoses why. The
-- batch is one JSON array of the single writes' parameter objects (dumped in C: psycopg
-- dumps text arrays element by element in Python, which cost more than the statement).
WITH batch AS MATERIALIZED (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS b(
        workflow_id text, owner_xid text, function_id int, function_name text, output text,
        error text, serialization text, child_workflow_id text, started_at bigint,
        completed_at bigint, application_name text
    )
), owners AS (
    -- "= ANY(ARRAY(...))" makes the ids one primary-key index condition whatever the
    -- planner guesses of the batch's size (a join could scan the table instead).
    SELECT ws.workflow_uuid, ws.owner_xid FROM {schema}.workflow_status AS ws
    WHERE ws.workflow_uuid = ANY(ARRAY(SELECT workflow_id FROM batch))
      AND (ws.workflow_uuid, ws.owner_xid) IN (SELECT workflow_id, owner_xid FROM batch)
    ORDER BY ws.workflow_uuid
    FOR NO KEY UPDATE
)
INSERT INTO {schema}.operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    child_workflow_id, started_at_epoch_ms, completed_at_epoch_ms, application_name
)
SELECT b.workflow_id, b.function_id, b.function_name, b.output, b.error, b.serialization,
       b.child_workflow_id, b.started_at, b.completed_at, b.application_name
FROM batch AS b
JOIN owners AS o ON o.workflow_uuid = b.workflow_id AND o.owner_xid = b.owner_xid
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
RETURNING workflow_uuid, function_id

-- name: record_outcomes
-- Group commit of outcomes: many workflows' final status and payload in one autocommit
-- statement, each only while its row is PENDING and owned by its writer (as
-- record_outcome). The (id, writer) pairs that won come back. A workflow twice in one
-- batch: at most one of its writers owns it, so at most one wins. The batch is a JSON
-- array of the single writes' parameter objects, as for record_steps.
WITH batch AS MATERIALIZED (
    SELECT * FROM json_to_recordset(%(batch)s::json) AS b(
        workflow_id text, owner_xid text, status text, output text, error text,
        completed_at bigint
    )
), updated AS (
    UPDATE {schema}.workflow_status AS ws
    SET status = b.status, deduplication_id = NULL, owner_xid = NULL,
        updated_at = b.completed_at, completed_at = b.completed_at
    FROM batch AS b
    WHERE ws.workflow_uuid = ANY(ARRAY(SELECT workflow_id FROM batch))  -- see record_steps
      AND ws.workflow_uuid = b.workflow_id AND ws.owner_xid = b.owner_xid
      -- The fence on the status, written through COALESCE so that no index on status
      -- qualifies: the rows are found by primary key, whatever the statistics say. With
      -- "status = 'PENDING'" a planner that believed few rows PENDING took the PENDING
      -- partial index through a bitmap, read every entry in it, dead ones included (a
      -- bitmap scan never marks an entry dead), and filtered by id: ~370 entries per
      -- batch in a drain of 5,000, growing with the rows finished since the last vacuum.
      AND COALESCE(ws.status, '') = 'PENDING'
    RETURNING ws.workflow_uuid, b.owner_xid
), stored AS (
    INSERT INTO {schema}.workflow_output (workflow_uuid, output, error)
    SELECT b.workflow_id, b.output, b.error FROM batch AS b
    JOIN updated AS u ON u.workflow_uuid = b.workflow_id AND u.owner_xid = b.owner_xid
    ON CONFLICT (workflow_uuid) DO UPDATE SET output = excluded.output, error = excluded.error
)
SELECT workflow_uuid, owner_xid FROM updated
