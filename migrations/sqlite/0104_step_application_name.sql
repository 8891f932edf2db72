-- The application that recorded a step.
ALTER TABLE operation_outputs ADD COLUMN "application_name" TEXT DEFAULT NULL;
