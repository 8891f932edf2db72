-- The application that owns a queue row.
ALTER TABLE queues ADD COLUMN "application_name" TEXT DEFAULT NULL;
