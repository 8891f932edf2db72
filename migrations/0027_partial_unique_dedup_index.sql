-- online
-- Deduplication only concerns rows that have a deduplication ID: enforce uniqueness with a
-- partial unique index (under a new name, so it can coexist with the old constraint until
-- migration 28 drops that).

CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uq_workflow_status_dedup_id
    ON {{schema}}.workflow_status (queue_name, deduplication_id)
    WHERE deduplication_id IS NOT NULL;
