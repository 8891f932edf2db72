-- The SQLite backend's statements: application versions.
--
-- Conventions (see sysdb/statements.py and sqlite/statements.py): a block starts with
-- "-- name: <name>"; its comment lines say what it is for. Parameters use sqlite3's named
-- style (:name). Tables are unqualified: SQLite has no schemas. Lists travel as JSON arrays
-- and are unpacked with json_each(). A block of several statements (each ending in ";" at
-- the end of a line) is a script: it runs in one BEGIN IMMEDIATE transaction, under
-- SQLite's single write lock, and its last statement's rows are its result. That lock is
-- what FOR UPDATE, NOWAIT and SKIP LOCKED buy on PostgreSQL: a script's ownership check
-- and the writes it guards see the same state. Times come from the engine's clock, never
-- SQLite's, so a MockClock drives them; the exceptions are as on PostgreSQL: queue rows
-- and application versions, whose timestamps the protocol does not carry.

-- name: insert_version
-- Register a version, stamped with the database's wall clock in milliseconds (PostgreSQL
-- stamps it with now(); the protocol carries no time for it).
INSERT INTO application_versions (
    version_id, version_name, version_timestamp, created_at, application_name
) VALUES (
    :version_id, :version,
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    :application_name
)
ON CONFLICT DO NOTHING

-- name: latest_version
-- The newest version of this application (or unclaimed): the one that may run version-less
-- queued rows. Of two stamped in the same millisecond, the one registered last.
SELECT version_name FROM application_versions
WHERE application_name = :application_name OR application_name IS NULL
ORDER BY version_timestamp DESC, rowid DESC
LIMIT 1
