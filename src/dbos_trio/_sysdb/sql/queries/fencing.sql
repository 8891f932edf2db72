-- Statements both backends run as written: fencing writes made outside the system database.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.

-- name: owns_workflow
-- Whether this execution still owns the workflow. A datasource transaction asks it after
-- inserting its checkpoint row and before COMMIT (holding that row, a later owner's insert
-- of it waits for our commit), and before dropping a finished workflow's checkpoints; a
-- durable sleep asks it when it wakes, so a cancel that landed meanwhile stops the body.
SELECT 1 FROM {schema}.workflow_status
WHERE workflow_uuid = :workflow_id AND owner_xid = :owner_xid
