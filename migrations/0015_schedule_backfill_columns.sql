-- Schedules remember their last firing (ISO-8601 text), may catch up on missed firings
-- (automatic_backfill), and may run in a named time zone (NULL = UTC).

ALTER TABLE {{schema}}.workflow_schedules ADD COLUMN last_fired_at TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.workflow_schedules
    ADD COLUMN automatic_backfill BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE {{schema}}.workflow_schedules ADD COLUMN cron_timezone TEXT DEFAULT NULL;
