-- Schedules belong to an application too (NULL = unclaimed).

ALTER TABLE {{schema}}.workflow_schedules
    ADD COLUMN IF NOT EXISTS application_name TEXT DEFAULT NULL;
