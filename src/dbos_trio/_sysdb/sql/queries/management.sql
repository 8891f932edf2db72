-- Statements both backends run as written: cancel, resume, delay and lookups.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table (the
-- quoted schema on PostgreSQL, "main" on SQLite); {in:<list parameter>} for membership
-- in a list; {now_ms} for the database's clock in epoch milliseconds.

-- name: cancel_workflows
-- Cancel whatever is not finished. Clearing owner_xid is what stops an execution running
-- elsewhere: its next fenced write finds it no longer owns the row.
UPDATE {schema}.workflow_status
SET status = 'CANCELLED', owner_xid = NULL, queue_name = NULL, deduplication_id = NULL,
    started_at_epoch_ms = NULL, updated_at = :now, completed_at = :now
WHERE workflow_uuid {in:workflow_ids}
  AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

-- name: list_children
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE parent_workflow_id {in:workflow_ids}

-- name: find_deduplicated
-- The workflow holding a deduplication id on a queue (the id is cleared when it finishes).
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE queue_name = :queue_name AND deduplication_id = :deduplication_id

-- name: existing_workflows
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE workflow_uuid {in:workflow_ids}

-- name: resume_workflows
-- Re-enqueue unfinished workflows (attempts reset, deadline re-armed at dequeue); their
-- checkpoints stay, so the re-run skips completed steps.
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL,
    queue_name = COALESCE(:queue_name, '_dbos_internal_queue'), recovery_attempts = 0,
    workflow_deadline_epoch_ms = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL,
    updated_at = :now, completed_at = NULL
WHERE workflow_uuid {in:workflow_ids}
  AND status NOT IN ('SUCCESS', 'ERROR')
RETURNING workflow_uuid

-- name: set_workflow_delay
UPDATE {schema}.workflow_status
SET delay_until_epoch_ms = :delay_until, updated_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'DELAYED'

-- name: forked_from
-- Which workflow a workflow was forked from (NULL: not a fork; no row: no such workflow).
SELECT forked_from FROM {schema}.workflow_status WHERE workflow_uuid = :workflow_id

-- name: pause_workflows
-- Hold unfinished workflows: nothing runs a PAUSED row (no executor of any SDK recovers or
-- claims it). owner_xid stays, so a step running now still records its checkpoint; its
-- execution stops before the next one (the cancel watcher sees the status). The queue,
-- deadline and deduplication id stay for unpause_workflows.
UPDATE {schema}.workflow_status
SET status = 'PAUSED', updated_at = :now
WHERE workflow_uuid {in:workflow_ids}
  AND status IN ('PENDING', 'ENQUEUED', 'DELAYED')
RETURNING workflow_uuid

-- name: pause_own_workflow
-- A step's retries ran out and its options say pause: the running execution holds its own
-- workflow, only while it still owns it.
UPDATE {schema}.workflow_status
SET status = 'PAUSED', updated_at = :now
WHERE workflow_uuid = :workflow_id AND status = 'PENDING' AND owner_xid = :owner_xid

-- name: unpause_workflows
-- Let paused workflows run again: back on their own queue (or the internal queue), or
-- DELAYED if paused before a delay that has not passed; attempts reset and the deadline
-- re-armed at dequeue, as resume_workflows does. The checkpoints stay, so the run goes on
-- from the first step not recorded.
UPDATE {schema}.workflow_status
SET status = CASE WHEN delay_until_epoch_ms > :now THEN 'DELAYED' ELSE 'ENQUEUED' END,
    owner_xid = NULL, queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue'),
    recovery_attempts = 0, workflow_deadline_epoch_ms = NULL, started_at_epoch_ms = NULL,
    updated_at = :now
WHERE workflow_uuid {in:workflow_ids} AND status = 'PAUSED'
RETURNING workflow_uuid, queue_name, status
