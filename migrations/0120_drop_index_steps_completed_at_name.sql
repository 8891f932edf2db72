-- online
-- Superseded by idx_operation_outputs_completed_at_function_name_v2 (119).

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_operation_outputs_completed_at_function_name;
