-- Drop the foreign key from steps to workflow_status, like the payload tables of 109 never
-- had one: step rows no longer cascade with their workflow, so whoever deletes a workflow
-- deletes its steps explicitly. Both spellings of the constraint name exist in the wild
-- (databases created by the TypeScript SDK's knex use *_foreign).

ALTER TABLE {{schema}}.operation_outputs
    DROP CONSTRAINT IF EXISTS operation_outputs_workflow_uuid_foreign;

ALTER TABLE {{schema}}.operation_outputs
    DROP CONSTRAINT IF EXISTS operation_outputs_workflow_uuid_fkey;
