-- The token of the insert that created a row, so a retried insert knows it was its own.
ALTER TABLE workflow_status ADD COLUMN "creator_xid" TEXT DEFAULT NULL;
