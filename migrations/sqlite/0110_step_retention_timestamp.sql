-- A retention timestamp on step checkpoints (NOT NULL once version 112 rebuilds the table).
ALTER TABLE operation_outputs ADD COLUMN retention_timestamp INTEGER;
