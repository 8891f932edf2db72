-- Statements both backends run as written: application versions.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table (the
-- quoted schema on PostgreSQL, "main" on SQLite); {in:<list parameter>} for membership
-- in a list; {now_ms} for the database's clock in epoch milliseconds.

-- name: claim_unowned_version
-- Launch: adopt a version row written by a nameless (unclaimed) writer.
UPDATE {schema}.application_versions SET application_name = :application_name
WHERE version_name = :version AND application_name IS NULL

-- name: version_owner
SELECT application_name FROM {schema}.application_versions WHERE version_name = :version
