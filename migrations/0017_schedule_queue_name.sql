-- Let a schedule enqueue its workflow on a chosen queue (NULL = the internal queue).

ALTER TABLE {{schema}}.workflow_schedules ADD COLUMN queue_name TEXT DEFAULT NULL;
