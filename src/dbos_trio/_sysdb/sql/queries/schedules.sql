-- Statements both backends run as written: the workflow_schedules table.
--
-- Portable SQL (see sysdb/statements.py): parameters in sqlite3's named style (:name),
-- converted for psycopg when PostgreSQL loads them; {schema}. before every table.
-- Rows are the official SDK's: context serialized by the writer's serializer, last_fired_at
-- an ISO 8601 string, application_name NULL for a schedule every application runs.

-- name: insert_schedule
-- Create a schedule; a name in use inserts nothing (the caller says why).
INSERT INTO {schema}.workflow_schedules (
    schedule_id, schedule_name, workflow_name, workflow_class_name, schedule, status,
    context, last_fired_at, automatic_backfill, cron_timezone, queue_name, application_name
) VALUES (
    :schedule_id, :schedule_name, :workflow_name, :workflow_class_name, :schedule, :status,
    :context, :last_fired_at, :automatic_backfill, :cron_timezone, :queue_name,
    :application_name
)
ON CONFLICT (schedule_name) DO NOTHING

-- name: upsert_schedule
-- Create or redefine a schedule by name. A redefinition keeps the row's id, status and
-- last_fired_at, and claims the row only if it is unclaimed: a row of another application
-- is left as it is (the caller reads the owner back and refuses).
INSERT INTO {schema}.workflow_schedules AS ws (
    schedule_id, schedule_name, workflow_name, workflow_class_name, schedule, status,
    context, last_fired_at, automatic_backfill, cron_timezone, queue_name, application_name
) VALUES (
    :schedule_id, :schedule_name, :workflow_name, :workflow_class_name, :schedule, :status,
    :context, :last_fired_at, :automatic_backfill, :cron_timezone, :queue_name,
    :application_name
)
ON CONFLICT (schedule_name) DO UPDATE SET
    workflow_name = excluded.workflow_name, workflow_class_name = excluded.workflow_class_name,
    schedule = excluded.schedule, context = excluded.context,
    automatic_backfill = excluded.automatic_backfill, cron_timezone = excluded.cron_timezone,
    queue_name = excluded.queue_name,
    application_name = COALESCE(ws.application_name, excluded.application_name)
WHERE ws.application_name IS NULL OR ws.application_name = excluded.application_name

-- name: schedule_owner
SELECT application_name FROM {schema}.workflow_schedules WHERE schedule_name = :schedule_name

-- name: list_schedules
-- Every schedule (the caller filters: a deployment has few).
SELECT schedule_id, schedule_name, workflow_name, workflow_class_name, schedule, status,
       context, last_fired_at, automatic_backfill, cron_timezone, queue_name, application_name
FROM {schema}.workflow_schedules
ORDER BY schedule_name

-- name: get_schedule
SELECT schedule_id, schedule_name, workflow_name, workflow_class_name, schedule, status,
       context, last_fired_at, automatic_backfill, cron_timezone, queue_name, application_name
FROM {schema}.workflow_schedules
WHERE schedule_name = :schedule_name

-- name: delete_schedule
DELETE FROM {schema}.workflow_schedules WHERE schedule_name = :schedule_name

-- name: set_schedule_status
UPDATE {schema}.workflow_schedules SET status = :status WHERE schedule_name = :schedule_name

-- name: record_schedule_fired
-- The firing that created its workflow row remembers its tick (what automatic backfill
-- resumes from). Only the creator writes it, so ticks are recorded in the order they fire
-- even when several executors fire each one.
UPDATE {schema}.workflow_schedules SET last_fired_at = :fired_at
WHERE schedule_name = :schedule_name
