-- Statements both backends run as written: reads made only for observability.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.

-- name: workflow_attributes
-- The row's attributes (the persisted trace carrier), read when a dequeued or recovered
-- row starts its workflow span; only while tracing is on.
SELECT attributes FROM {schema}.workflow_status WHERE workflow_uuid = :workflow_id

-- name: queue_depths
-- The active rows of each queue — waiting (ENQUEUED), not due yet (DELAYED), running
-- (PENDING) — for the metrics gauge; served by the (queue_name, status, ...) index.
SELECT queue_name, status, COUNT(*) FROM {schema}.workflow_status
WHERE queue_name IS NOT NULL AND status IN ('PENDING', 'ENQUEUED', 'DELAYED')
GROUP BY queue_name, status
