-- Statements both backends run as written: when the dequeue supervisor must look next.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name).

-- name: next_delayed_due
-- The earliest delay_until of the application's (and unclaimed) DELAYED rows, so the
-- supervisor releases each at its time rather than at its next sweep; NULL when there is
-- none. Served by the partial index on DELAYED rows (migration 16).
SELECT min(delay_until_epoch_ms) FROM {schema}.workflow_status
WHERE status = 'DELAYED'
  AND (application_name = :application_name OR application_name IS NULL)

-- name: rate_window_reopens
-- When the queue's rate limit lets the next start in (epoch ms): the start that must
-- leave the window for one more to fit, plus the period; NULL while the window is not
-- full. Counts what the claim counts (rate-limited starts of the application or
-- unclaimed, finished ones included), so a worker sleeps until then, not a whole poll.
SELECT s.started_at_epoch_ms + :period_ms FROM (
    SELECT started_at_epoch_ms, count(*) OVER () AS n,
           row_number() OVER (ORDER BY started_at_epoch_ms) AS k
    FROM {schema}.workflow_status
    WHERE queue_name = :queue_name AND rate_limited = TRUE
      AND status NOT IN ('ENQUEUED', 'DELAYED')
      AND started_at_epoch_ms > :now - :period_ms
      AND (application_name = :application_name OR application_name IS NULL)
) AS s
WHERE s.n >= :limit AND s.k = s.n - :limit + 1
