-- Statements both backends run as written: the dashboard's aggregates over time (work
-- finished per minute, latency percentiles by workflow name, queue backlog and service,
-- counts by status).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- {schema}. before every table. Read-only, and bounded: every part is either a range of
-- a time index (a window the caller gives) or the in-flight/DELAYED partial indexes, each
-- spelled with the index's own condition (SQLite uses a partial index only then), so a
-- table of millions of finished rows costs what the window holds, never a scan.

-- name: finished_per_minute
-- Rows that reached a final status in [since, until), by minute (epoch ms / 60000) and
-- status: at most (window minutes) x (final statuses) rows. completed_at is set by every
-- final write (outcome, cancel, dead-letter), and indexed where not null.
SELECT completed_at / 60000, status, COUNT(*)
FROM {schema}.workflow_status
WHERE completed_at IS NOT NULL AND completed_at >= :since_ms AND completed_at < :until_ms
GROUP BY completed_at / 60000, status
ORDER BY 1, 2

-- name: latency_ranks
-- End-to-end latency (created to completed) of the latest :sample rows that succeeded or
-- failed in the window, by workflow name: the rows at the nearest ranks of the 50th, 95th
-- and 99th percentiles and the slowest, with the name's count in the sample. The sample is
-- read backwards along the completed_at index, so its cost is bounded however many rows
-- the window holds (a sort of 100,000 spilled to disk); integer ranks, ceil(n * p / 100),
-- are computed here so only four rows a name leave the database; busiest names first.
SELECT name, total, position, duration FROM (
    SELECT name, duration,
           ROW_NUMBER() OVER (PARTITION BY name ORDER BY duration) AS position,
           COUNT(*) OVER (PARTITION BY name) AS total
    FROM (
        SELECT name, completed_at - created_at AS duration
        FROM {schema}.workflow_status
        WHERE completed_at IS NOT NULL AND completed_at >= :since_ms
          AND completed_at < :until_ms AND status IN ('SUCCESS', 'ERROR')
        ORDER BY completed_at DESC
        LIMIT :sample
    ) latest
) ranked
WHERE position = (total * 50 + 99) / 100 OR position = (total * 95 + 99) / 100
   OR position = (total * 99 + 99) / 100 OR position = total
ORDER BY total DESC, name, position
LIMIT :limit

-- name: queue_activity
-- Per queue: ENQUEUED rows (count, oldest created_at), PENDING rows (count, newest
-- heartbeat stamp) and rows dequeued since :since_ms (count, newest start). The first two
-- search the in-flight index, the third the started_at index from :since_ms on (callers
-- pass a recent instant: the last minute, the liveness window).
SELECT queue_name, status, COUNT(*), MIN(created_at)
FROM {schema}.workflow_status
WHERE status IN ('ENQUEUED', 'PENDING') AND status = 'ENQUEUED' AND queue_name IS NOT NULL
GROUP BY queue_name, status
UNION ALL
SELECT queue_name, status, COUNT(*), MAX(updated_at)
FROM {schema}.workflow_status
WHERE status IN ('ENQUEUED', 'PENDING') AND status = 'PENDING' AND queue_name IS NOT NULL
GROUP BY queue_name, status
UNION ALL
SELECT queue_name, 'STARTED', COUNT(*), MAX(started_at_epoch_ms)
FROM {schema}.workflow_status
WHERE started_at_epoch_ms IS NOT NULL AND started_at_epoch_ms >= :since_ms
  AND queue_name IS NOT NULL
GROUP BY queue_name
ORDER BY 1, 2

-- name: status_counts
-- The rows still to run, by status: the in-flight and DELAYED partial indexes only (the
-- final statuses of a window are the sum of finished_per_minute's rows).
SELECT status, COUNT(*) FROM {schema}.workflow_status
WHERE status IN ('ENQUEUED', 'PENDING')
GROUP BY status
UNION ALL
SELECT status, COUNT(*) FROM {schema}.workflow_status
WHERE status = 'DELAYED'
GROUP BY status
ORDER BY 1
