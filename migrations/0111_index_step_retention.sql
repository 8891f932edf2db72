-- online
-- Garbage collection of steps scans by retention timestamp; build that index online because
-- operation_outputs is usually the largest table.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_operation_outputs_retention
    ON {{schema}}.operation_outputs (retention_timestamp);
