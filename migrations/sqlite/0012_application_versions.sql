-- Registered application versions; the latest (highest timestamp) runs version-less rows.
CREATE TABLE application_versions (
    version_id TEXT NOT NULL PRIMARY KEY,
    version_name TEXT NOT NULL UNIQUE,
    version_timestamp INTEGER NOT NULL DEFAULT (strftime('%s','now') * 1000),
    created_at INTEGER NOT NULL DEFAULT (strftime('%s','now') * 1000)
);
