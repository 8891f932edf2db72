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
