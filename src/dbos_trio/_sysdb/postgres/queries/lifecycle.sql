-- The PostgreSQL backend's statements: application versions, notifications, the sweep lock.
--
-- Conventions (see sysdb/statements.py): a block starts with "-- name: <name>"; the comment
-- lines after it say what it is for. "{schema}" is the quoted schema name. Parameters use
-- psycopg's named style, so a literal percent sign is written "%%". Times are passed in from
-- the engine's clock, never read with now(), so a MockClock drives them (see _clock.py).

-- name: insert_version
INSERT INTO {schema}.application_versions (version_id, version_name, application_name)
VALUES (%(version_id)s, %(version)s, %(application_name)s)
ON CONFLICT DO NOTHING

-- name: latest_version
-- The newest version of this application (or unclaimed): the one that may run version-less
-- queued rows.
SELECT version_name FROM {schema}.application_versions
WHERE application_name = %(application_name)s OR application_name IS NULL
ORDER BY version_timestamp DESC
LIMIT 1

-- name: notify_batch
-- One NOTIFY per payload of a coalesced batch, in one statement per channel.
SELECT pg_notify(%(channel)s, payload) FROM unnest(%(payloads)s::text[]) AS payload

-- name: try_timeout_sweep_lock
-- One executor per application sweeps timeouts at a time: a transaction-scoped advisory
-- lock keyed by schema and application, released when the sweep's transaction ends.
SELECT pg_try_advisory_xact_lock(%(lock_key)s)
