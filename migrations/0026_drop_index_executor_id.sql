-- online
-- The executor_id index costs every status write and no hot query needs it any more.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.workflow_status_executor_id_index;
