-- online
-- The plain status index is superseded by the partial status indexes of 29 and 30.

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.workflow_status_status_index;
