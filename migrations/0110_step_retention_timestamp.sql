-- Steps get a retention timestamp too, for garbage collection independent of the workflow row.

ALTER TABLE {{schema}}.operation_outputs
    ADD COLUMN IF NOT EXISTS retention_timestamp BIGINT NOT NULL
        DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT;
