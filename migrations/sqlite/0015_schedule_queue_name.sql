-- Scheduled workflows may run on a named queue.
ALTER TABLE workflow_schedules ADD COLUMN "queue_name" TEXT DEFAULT NULL;
