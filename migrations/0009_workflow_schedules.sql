-- Database-backed cron schedules, so schedules can be created, paused and edited at run
-- time and are shared by every executor of the application.

CREATE TABLE {{schema}}.workflow_schedules (
    schedule_id          TEXT PRIMARY KEY,
    schedule_name        TEXT NOT NULL UNIQUE,
    workflow_name        TEXT NOT NULL,
    workflow_class_name  TEXT,
    schedule             TEXT NOT NULL,
    status               TEXT NOT NULL DEFAULT 'ACTIVE',
    context              TEXT NOT NULL
);
