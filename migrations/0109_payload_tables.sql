-- Workflow inputs and outcomes get tables of their own, each row with a retention timestamp
-- for garbage collection. No foreign keys: deleting a workflow deletes these rows explicitly.
-- Readers fall back to the legacy workflow_status columns for rows written before this.

CREATE TABLE IF NOT EXISTS {{schema}}.workflow_input (
    workflow_uuid        TEXT NOT NULL PRIMARY KEY,
    inputs               TEXT,
    retention_timestamp  BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT
);

CREATE TABLE IF NOT EXISTS {{schema}}.workflow_output (
    workflow_uuid        TEXT NOT NULL PRIMARY KEY,
    output               TEXT,
    error                TEXT,
    retention_timestamp  BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT
);

CREATE INDEX IF NOT EXISTS idx_workflow_input_retention
    ON {{schema}}.workflow_input (retention_timestamp);

CREATE INDEX IF NOT EXISTS idx_workflow_output_retention
    ON {{schema}}.workflow_output (retention_timestamp);
