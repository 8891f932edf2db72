-- Registry of application versions; the "latest" version is the one with the highest
-- version_timestamp, and moving that timestamp promotes or rolls back a version.

CREATE TABLE {{schema}}.application_versions (
    version_id         TEXT NOT NULL PRIMARY KEY,
    version_name       TEXT NOT NULL UNIQUE,
    version_timestamp  BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT,
    created_at         BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT
);
