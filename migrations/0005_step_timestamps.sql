-- Record when each step started and finished, for observability and for durable sleep
-- (a DBOS.sleep checkpoint stores its wake-up time as completed_at_epoch_ms).

ALTER TABLE {{schema}}.operation_outputs
    ADD COLUMN started_at_epoch_ms BIGINT,
    ADD COLUMN completed_at_epoch_ms BIGINT;
