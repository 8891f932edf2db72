-- Statements both backends run as written: listing and promoting application versions,
-- counting the work still to run by version, and moving a silent executor's work.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- {schema}. before every table, {in:<list parameter>} for membership in a list.

-- name: list_versions_of_application
-- An application's versions and unclaimed ones, newest first (latest = first).
SELECT version_id, version_name, version_timestamp, created_at, application_name
FROM {schema}.application_versions
WHERE application_name = :application_name OR application_name IS NULL
ORDER BY version_timestamp DESC, created_at DESC

-- name: list_all_versions
SELECT version_id, version_name, version_timestamp, created_at, application_name
FROM {schema}.application_versions
ORDER BY version_timestamp DESC, created_at DESC

-- name: stamp_version
-- Promote (or roll back to) a version: its timestamp becomes the newest. An unclaimed row
-- is claimed by the promoting application: unclaimed, it would be every peer's latest.
UPDATE {schema}.application_versions
SET version_timestamp = :now, application_name = :application_name
WHERE version_name = :version
  AND (application_name = :application_name OR application_name IS NULL)

-- name: active_counts_of_application
-- Work still to run, by version, status, executor and workflow name. Two parts, each
-- spelled as one partial index's own condition (in-flight rows, DELAYED rows), so each is
-- an index search on both backends: SQLite uses a partial index only when the query
-- repeats its condition, and a single IN of the three statuses scanned the whole table.
-- The parts' statuses are disjoint and status is a grouping key: nothing to merge.
SELECT application_version, status, executor_id, name, COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE status IN ('ENQUEUED', 'PENDING')
  AND (application_name = :application_name OR application_name IS NULL)
GROUP BY application_version, status, executor_id, name
UNION ALL
SELECT application_version, status, executor_id, name, COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE status = 'DELAYED'
  AND (application_name = :application_name OR application_name IS NULL)
GROUP BY application_version, status, executor_id, name

-- name: active_counts_all
-- As active_counts_of_application, for every application.
SELECT application_version, status, executor_id, name, COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE status IN ('ENQUEUED', 'PENDING')
GROUP BY application_version, status, executor_id, name
UNION ALL
SELECT application_version, status, executor_id, name, COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE status = 'DELAYED'
GROUP BY application_version, status, executor_id, name

-- name: reenqueue_executor
-- Another executor's PENDING rows go back to their queue (or the internal queue) with no
-- owner token, in one write: its own execution, if any still runs, fails the fence at
-- its next write. Only rows not stamped since :updated_before (a heartbeat newer than
-- that says the owner runs it), of the given version (any when :any_version is 1).
UPDATE {schema}.workflow_status
SET status = 'ENQUEUED', owner_xid = NULL, started_at_epoch_ms = NULL, updated_at = :now,
    queue_name = COALESCE(NULLIF(queue_name, ''), '_dbos_internal_queue')
WHERE status = 'PENDING' AND executor_id = :executor_id
  AND (:any_version = 1 OR application_version = :application_version)
  AND (application_name = :application_name OR application_name IS NULL)
  AND updated_at <= :updated_before
RETURNING workflow_uuid

-- name: touch_running
-- The heartbeat: the rows this executor runs are stamped as alive.
UPDATE {schema}.workflow_status SET updated_at = :now
WHERE status = 'PENDING' AND executor_id = :executor_id AND workflow_uuid {in:workflow_ids}

-- name: silent_executors
-- Executors (not this one) whose PENDING rows of the application were all last stamped at
-- or before :silent_before: no heartbeat for that long. Only executors all of whose rows
-- carry a heartbeat owner token (core/ids.py: '8d70' at the 15th character): an executor
-- that never stamps its rows (the official SDKs) is silent however alive it is, so its
-- silence proves nothing and its work is never taken.
SELECT executor_id FROM {schema}.workflow_status
WHERE status = 'PENDING' AND executor_id IS NOT NULL AND executor_id <> :executor_id
  AND (application_name = :application_name OR application_name IS NULL)
GROUP BY executor_id
HAVING MAX(updated_at) <= :silent_before
  AND MIN(CASE WHEN substr(owner_xid, 15, 4) = '8d70' THEN 1 ELSE 0 END) = 1

-- name: names_ever_run
-- Of the given workflow names, those some row of which was ever dequeued or started
-- (doctor: a name never run anywhere is likely misspelled). A scan: diagnostics only.
SELECT DISTINCT name FROM {schema}.workflow_status
WHERE name {in:names} AND status NOT IN ('ENQUEUED', 'DELAYED')
