-- online
-- The same per owning application: each application's latest version is a one-row seek.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_application_versions_owner_timestamp
    ON {{schema}}.application_versions (application_name, version_timestamp DESC);
