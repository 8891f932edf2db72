-- online
-- Drop the full forked_from index (almost every row has NULL there); migration 23 rebuilds
-- it as a partial index. Concurrently, so live executors are not blocked.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_forked_from;
