-- online
-- Superseded by idx_workflow_status_in_flight_v2 (115).

DROP INDEX CONCURRENTLY IF EXISTS {{schema}}.idx_workflow_status_in_flight;
