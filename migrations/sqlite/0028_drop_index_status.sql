-- The partial indexes cover what the full status index served.
DROP INDEX IF EXISTS "workflow_status_status_index";
