-- Statements both backends run as written: bulk sends' lookups and reading all events.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- {schema}. before every table, {in:<list parameter>} for membership in a list.

-- name: list_forks
-- The workflows forked directly from any of these (a send_to_forks walks this down).
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE forked_from {in:workflow_ids}

-- name: get_all_events
-- Every event of a workflow, at its latest value.
SELECT key, value, serialization FROM {schema}.workflow_events
WHERE workflow_uuid = :workflow_id
ORDER BY key
