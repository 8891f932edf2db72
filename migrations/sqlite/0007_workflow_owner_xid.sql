-- The token of the execution that owns a workflow: every checkpoint write is fenced by it.
ALTER TABLE workflow_status ADD COLUMN "owner_xid" TEXT DEFAULT NULL;
