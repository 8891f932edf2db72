-- online
-- "Latest application version" is the highest version_timestamp: make that a one-row seek.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_application_versions_timestamp
    ON {{schema}}.application_versions (version_timestamp DESC);
