-- Version names become unique per owning application rather than globally. Built inside the
-- transaction: the global UNIQUE(version_name) still holds, so no existing row can conflict,
-- and no existing row has an owner yet. The global constraint stays until every SDK that may
-- reach this database is past 107.

CREATE UNIQUE INDEX IF NOT EXISTS uq_application_versions_owner_version
    ON {{schema}}.application_versions (application_name, version_name)
    WHERE application_name IS NOT NULL;
