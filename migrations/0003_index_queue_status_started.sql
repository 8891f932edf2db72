-- Speed up the dequeue/rate-limit scans of a queue by status and start time.
-- (Superseded by narrower partial indexes; migration 35 drops it.)

CREATE INDEX idx_workflow_status_queue_status_started
    ON {{schema}}.workflow_status (queue_name, status, started_at_epoch_ms);
