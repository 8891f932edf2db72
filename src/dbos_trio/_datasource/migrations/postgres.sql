-- The datasource schema on PostgreSQL, version by version, as the official SDK 3.4 has it
-- (so a database used by either SDK's datasource is shared). {schema} is quoted.

-- name: postgres_versions_table
-- The datasource's own version table: one row, the highest version applied.
CREATE TABLE {schema}.dbos_datasource_migrations (version BIGINT NOT NULL PRIMARY KEY)

-- name: postgres_migration_1
-- IF NOT EXISTS: a table made before versioning existed is adopted as it is.
CREATE TABLE IF NOT EXISTS {schema}.datasource_outputs (
    workflow_id TEXT NOT NULL,
    step_id INT4 NOT NULL,
    output TEXT,
    error TEXT,
    serialization TEXT,
    created_at BIGINT NOT NULL DEFAULT (EXTRACT(EPOCH FROM now())*1000)::bigint,
    PRIMARY KEY (workflow_id, step_id)
)
