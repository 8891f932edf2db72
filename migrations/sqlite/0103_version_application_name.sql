-- The application a registered version belongs to.
ALTER TABLE application_versions ADD COLUMN "application_name" TEXT DEFAULT NULL;
