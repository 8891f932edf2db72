-- The full UNIQUE (queue_name, deduplication_id) constraint is now implied by the partial
-- index of migration 27; drop it. Dropping a constraint is a quick catalog change.

ALTER TABLE {{schema}}.workflow_status
    DROP CONSTRAINT IF EXISTS uq_workflow_status_queue_name_dedup_id;
