-- From 100 on, every SDK defines the same migration at the same number.
-- The application that owns a workflow row (NULL: unclaimed, any application may run it).
ALTER TABLE workflow_status ADD COLUMN "application_name" TEXT DEFAULT NULL;
