-- Workflow inputs and outcomes move out of workflow_status into tables of their own, each
-- with a retention timestamp (the legacy columns stay, read as a fallback).
CREATE TABLE IF NOT EXISTS workflow_input (
    workflow_uuid TEXT NOT NULL PRIMARY KEY,
    inputs TEXT,
    retention_timestamp INTEGER NOT NULL DEFAULT (strftime('%s','now') * 1000)
);

CREATE TABLE IF NOT EXISTS workflow_output (
    workflow_uuid TEXT NOT NULL PRIMARY KEY,
    output TEXT,
    error TEXT,
    retention_timestamp INTEGER NOT NULL DEFAULT (strftime('%s','now') * 1000)
);

CREATE INDEX IF NOT EXISTS idx_workflow_input_retention
    ON workflow_input (retention_timestamp);
CREATE INDEX IF NOT EXISTS idx_workflow_output_retention
    ON workflow_output (retention_timestamp);
