-- Debouncing: a debounced workflow waits (DELAYED) until input stops arriving, bounded by a
-- deadline; is_debounced tells the delay sweep to release its deduplication ID.

ALTER TABLE {{schema}}.workflow_status
    ADD COLUMN IF NOT EXISTS debounce_deadline_epoch_ms BIGINT DEFAULT NULL;
ALTER TABLE {{schema}}.workflow_status
    ADD COLUMN IF NOT EXISTS is_debounced BOOLEAN NOT NULL DEFAULT FALSE;
