-- online
-- idx_notifications (migration 12) has the same columns in the same order as
-- idx_workflow_topic; the duplicate only costs writes.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_notifications;
