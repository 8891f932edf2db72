-- Finding the latest registered version.
CREATE INDEX IF NOT EXISTS "idx_application_versions_timestamp" ON "application_versions" ("version_timestamp" DESC);
