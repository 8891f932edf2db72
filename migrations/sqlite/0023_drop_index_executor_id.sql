-- No query looks workflows up by executor alone any more.
DROP INDEX IF EXISTS "workflow_status_executor_id_index";
