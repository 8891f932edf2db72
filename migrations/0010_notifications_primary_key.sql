-- Some early databases created notifications without a primary key; give them one. Databases
-- created since then already have it from migration 1, so only add it when it is missing.
-- The table is found through its row type rather than a quoted name, so any schema name works.

DO $dbos_migration$
BEGIN
    IF NOT EXISTS (
        SELECT 1
        FROM pg_catalog.pg_index AS idx
        JOIN pg_catalog.pg_type AS row_type ON row_type.typrelid = idx.indrelid
        WHERE row_type.oid = pg_catalog.pg_typeof(NULL::{{schema}}.notifications)
          AND idx.indisprimary
    ) THEN
        ALTER TABLE {{schema}}.notifications ADD PRIMARY KEY (message_uuid);
    END IF;
END
$dbos_migration$;
