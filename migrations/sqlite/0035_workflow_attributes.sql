-- User attributes, as JSON text (SQLite has no JSONB and no GIN index, so none is built).
-- (PostgreSQL's versions 38-39 are a SQL function and a NOTIFY trigger; SQLite has neither.)
ALTER TABLE workflow_status ADD COLUMN "attributes" TEXT;
