-- Statements on a datasource's checkpoint table, for both backends.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when the PostgreSQL datasource loads them; {outputs} is the table,
-- schema-qualified and quoted on PostgreSQL, bare on SQLite (as the official SDK has it).

-- name: insert_checkpoint
-- A transaction's result (or error), written inside that same transaction. No row back
-- means another execution committed this step first; above READ COMMITTED that race may
-- surface as a serialization failure instead, and the retry then lands here.
INSERT INTO {outputs} (workflow_id, step_id, output, error, serialization)
VALUES (:workflow_id, :step_id, :output, :error, :serialization)
ON CONFLICT (workflow_id, step_id) DO NOTHING
RETURNING workflow_id

-- name: recorded_checkpoint
-- What an earlier execution of this step committed, if anything.
SELECT output, error, serialization FROM {outputs}
WHERE workflow_id = :workflow_id AND step_id = :step_id

-- name: delete_checkpoints
-- A finished workflow's checkpoints: its system-database step rows now cover them.
DELETE FROM {outputs} WHERE workflow_id = :workflow_id AND step_id >= :from_step
