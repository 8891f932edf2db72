-- online
-- Superseded by the in-flight (32) and rate-limited (34) partial indexes.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_queue_status_started;
