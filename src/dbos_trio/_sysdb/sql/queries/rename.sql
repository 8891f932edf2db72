-- Statements both backends run as written: renaming an application (re-owning its rows).
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- {schema}. before every table. A row moves when it belongs to :old_name, or when
-- :adopt is 1 and it is unclaimed (application_name IS NULL).

-- name: rename_queues
UPDATE {schema}.queues SET application_name = :new_name
WHERE application_name = :old_name OR (:adopt = 1 AND application_name IS NULL)

-- name: rename_schedules
UPDATE {schema}.workflow_schedules SET application_name = :new_name
WHERE application_name = :old_name OR (:adopt = 1 AND application_name IS NULL)

-- name: rename_versions
UPDATE {schema}.application_versions SET application_name = :new_name
WHERE application_name = :old_name OR (:adopt = 1 AND application_name IS NULL)

-- name: rename_in_flight
-- In the same transaction as queues and versions: work still to run must never be owned
-- by a name whose version rows it cannot see.
UPDATE {schema}.workflow_status SET application_name = :new_name
WHERE (application_name = :old_name OR (:adopt = 1 AND application_name IS NULL))
  AND status IN ('PENDING', 'ENQUEUED', 'DELAYED')

-- name: rename_workflows_upper
-- The key closing the next batch of finished workflows: the :offset-th (0-based) matching
-- id after :after (ranges, not LIMIT on the update: each batch is one index range).
SELECT workflow_uuid FROM {schema}.workflow_status
WHERE (application_name = :old_name OR (:adopt = 1 AND application_name IS NULL))
  AND workflow_uuid > :after
ORDER BY workflow_uuid LIMIT 1 OFFSET :offset

-- name: rename_workflows_range
UPDATE {schema}.workflow_status SET application_name = :new_name
WHERE (application_name = :old_name OR (:adopt = 1 AND application_name IS NULL))
  AND workflow_uuid > :after AND workflow_uuid <= :upper

-- name: rename_workflows_rest
-- The last batch drops the lower bound: rows that appeared below it meanwhile move too.
UPDATE {schema}.workflow_status SET application_name = :new_name
WHERE application_name = :old_name OR (:adopt = 1 AND application_name IS NULL)

-- name: rename_steps_upper
SELECT DISTINCT workflow_uuid FROM {schema}.operation_outputs
WHERE (application_name = :old_name OR (:adopt = 1 AND application_name IS NULL))
  AND workflow_uuid > :after
ORDER BY workflow_uuid LIMIT 1 OFFSET :offset

-- name: rename_steps_range
UPDATE {schema}.operation_outputs SET application_name = :new_name
WHERE (application_name = :old_name OR (:adopt = 1 AND application_name IS NULL))
  AND workflow_uuid > :after AND workflow_uuid <= :upper

-- name: rename_steps_rest
UPDATE {schema}.operation_outputs SET application_name = :new_name
WHERE application_name = :old_name OR (:adopt = 1 AND application_name IS NULL)
