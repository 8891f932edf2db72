-- Steps carry their workflow's application, denormalized so step queries can be scoped to an
-- application without joining workflow_status.

ALTER TABLE {{schema}}.operation_outputs
    ADD COLUMN IF NOT EXISTS application_name TEXT DEFAULT NULL;
