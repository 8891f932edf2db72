-- online
-- Unclaimed versions (no owner) count as one more owner: their names are unique among
-- themselves. Every existing row matches this predicate, hence the online build.

CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uq_application_versions_unclaimed_version
    ON {{schema}}.application_versions (version_name)
    WHERE application_name IS NULL;
