-- Support step-level observability queries (steps by completion time and name).
-- (Migrations 119/120 replace it with a covering version.)

CREATE INDEX idx_operation_outputs_completed_at_function_name
    ON {{schema}}.operation_outputs (completed_at_epoch_ms, function_name);
