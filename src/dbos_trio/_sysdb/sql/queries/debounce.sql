-- Statements both backends run as written: debouncing (the official SDK's algorithm and
-- row shapes, so a bounce from either SDK coalesces onto the same workflow).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name).

-- name: bounce_delayed
-- Push the key's debounced, still DELAYED workflow back to :delay_until (never past its
-- debounce deadline) and claim it for the bouncing application if unclaimed. Matching the
-- workflow name too keeps keys of different workflows that collide as strings
-- ("a" + "b-c" and "a-b" + "c") apart.
UPDATE {schema}.workflow_status
SET delay_until_epoch_ms = CASE
        WHEN debounce_deadline_epoch_ms IS NOT NULL
             AND debounce_deadline_epoch_ms < :delay_until THEN debounce_deadline_epoch_ms
        ELSE :delay_until END,
    serialization = :serialization, updated_at = :now,
    application_name = COALESCE(application_name, :application_name)
WHERE name = :workflow_name AND queue_name = :queue_name
  AND deduplication_id = :deduplication_id AND status = 'DELAYED' AND is_debounced
  AND (CAST(:application_name AS TEXT) IS NULL OR application_name = :application_name
       OR application_name IS NULL)
RETURNING workflow_uuid

-- name: replace_inputs
-- The bounced workflow runs with the last bounce's arguments.
INSERT INTO {schema}.workflow_input (workflow_uuid, inputs) VALUES (:workflow_id, :inputs)
ON CONFLICT (workflow_uuid) DO UPDATE SET inputs = excluded.inputs

-- name: deduplication_holder
-- Whoever holds the key on the queue, debounced or not, of any application.
SELECT workflow_uuid, is_debounced, name, application_name FROM {schema}.workflow_status
WHERE queue_name = :queue_name AND deduplication_id = :deduplication_id
