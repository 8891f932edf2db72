-- online
-- The step observability index, covering application_name like in_flight_v2 (115).

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_operation_outputs_completed_at_function_name_v2
    ON {{schema}}.operation_outputs (completed_at_epoch_ms, function_name)
    INCLUDE (application_name);
