-- The PostgreSQL backend's statements: one batch of garbage collection, and its leader lock.
--
-- Conventions (see sysdb/statements.py): "{schema}" is the quoted schema name; parameters
-- in psycopg's named style.

-- name: gc_batch
-- Delete one batch of terminal workflows, oldest first from the watermark :after, walking
-- the created_at index. A row is doomed if it finished before :completed_before or was
-- created before :keep_before (-1: no such bound). FOR UPDATE SKIP LOCKED: a row another
-- transaction holds (being resumed, forked from, written) is left for the next run, and
-- the status is re-checked on the locked row, so one resumed meanwhile is never taken.
-- Payload and step tables have no foreign key (migration 112) and are deleted here;
-- messages, events and streams go by cascade. One row back per deleted workflow.
WITH doomed AS (
    SELECT workflow_uuid AS id FROM {schema}.workflow_status
    WHERE created_at >= %(after)s AND created_at < %(created_before)s
      AND (created_at < %(keep_before)s
           OR COALESCE(completed_at, updated_at, created_at) < %(completed_before)s)
      AND status NOT IN ('PENDING', 'ENQUEUED', 'DELAYED', 'PAUSED')
      AND (%(application_name)s::text IS NULL
           OR application_name = %(application_name)s OR application_name IS NULL)
    ORDER BY created_at
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), inputs AS (
    DELETE FROM {schema}.workflow_input AS t USING doomed WHERE t.workflow_uuid = doomed.id
), outputs AS (
    DELETE FROM {schema}.workflow_output AS t USING doomed WHERE t.workflow_uuid = doomed.id
), steps AS (
    DELETE FROM {schema}.operation_outputs AS t USING doomed WHERE t.workflow_uuid = doomed.id
)
DELETE FROM {schema}.workflow_status AS t USING doomed
WHERE t.workflow_uuid = doomed.id
RETURNING t.created_at

-- name: try_retention_lock
-- One executor per application runs the retention policy at a time: a transaction-scoped
-- advisory lock (keyed by schema and application), taken in each batch's transaction.
SELECT pg_try_advisory_xact_lock(%(lock_key)s)
