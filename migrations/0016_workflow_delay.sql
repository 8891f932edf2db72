-- Delayed enqueue: a DELAYED workflow becomes ENQUEUED once delay_until_epoch_ms passes. The
-- partial index keeps the "which delays are due" sweep proportional to the delayed rows.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN delay_until_epoch_ms BIGINT DEFAULT NULL;

CREATE INDEX idx_workflow_status_delayed
    ON {{schema}}.workflow_status (delay_until_epoch_ms)
    WHERE status = 'DELAYED';
