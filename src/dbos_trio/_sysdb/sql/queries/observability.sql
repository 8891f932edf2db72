-- Statements both backends run as written: reads made only for observability.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.

-- name: workflow_attributes
-- The row's attributes (the persisted trace carrier), read when a dequeued or recovered
-- row starts its workflow span; only while tracing is on.
SELECT attributes FROM {schema}.workflow_status WHERE workflow_uuid = :workflow_id
