-- The datasource schema on SQLite, version by version, as the official SDK 3.4 has it:
-- unqualified tables, the same columns and primary key.

-- name: sqlite_versions_table
CREATE TABLE IF NOT EXISTS dbos_datasource_migrations (version INTEGER NOT NULL PRIMARY KEY)

-- name: sqlite_migration_1
-- created_at in epoch milliseconds (julianday keeps the milliseconds on every SQLite).
CREATE TABLE IF NOT EXISTS datasource_outputs (
    workflow_id TEXT NOT NULL,
    step_id INTEGER NOT NULL,
    output TEXT,
    error TEXT,
    serialization TEXT,
    created_at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    PRIMARY KEY (workflow_id, step_id)
)
