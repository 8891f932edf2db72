-- The SQLite backend's statements: one batch of garbage collection.

-- name: gc_batch
-- Delete one batch of terminal workflows (see the PostgreSQL statement for the bounds).
-- SQLite has no data-modifying CTEs: a script, in one BEGIN IMMEDIATE transaction, where
-- every part selects the same batch (the same ordered, limited query over rows nobody
-- else can change meanwhile), and the last part's rows are the deleted workflows.
DELETE FROM workflow_input WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE created_at >= :after AND created_at < :created_before
      AND (created_at < :keep_before
           OR COALESCE(completed_at, updated_at, created_at) < :completed_before)
      AND status NOT IN ('PENDING', 'ENQUEUED', 'DELAYED', 'PAUSED')
      AND (:application_name IS NULL
           OR application_name = :application_name OR application_name IS NULL)
    ORDER BY created_at, workflow_uuid LIMIT :batch_size);
DELETE FROM workflow_output WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE created_at >= :after AND created_at < :created_before
      AND (created_at < :keep_before
           OR COALESCE(completed_at, updated_at, created_at) < :completed_before)
      AND status NOT IN ('PENDING', 'ENQUEUED', 'DELAYED', 'PAUSED')
      AND (:application_name IS NULL
           OR application_name = :application_name OR application_name IS NULL)
    ORDER BY created_at, workflow_uuid LIMIT :batch_size);
DELETE FROM operation_outputs WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE created_at >= :after AND created_at < :created_before
      AND (created_at < :keep_before
           OR COALESCE(completed_at, updated_at, created_at) < :completed_before)
      AND status NOT IN ('PENDING', 'ENQUEUED', 'DELAYED', 'PAUSED')
      AND (:application_name IS NULL
           OR application_name = :application_name OR application_name IS NULL)
    ORDER BY created_at, workflow_uuid LIMIT :batch_size);
DELETE FROM workflow_status WHERE workflow_uuid IN (
    SELECT workflow_uuid FROM workflow_status
    WHERE created_at >= :after AND created_at < :created_before
      AND (created_at < :keep_before
           OR COALESCE(completed_at, updated_at, created_at) < :completed_before)
      AND status NOT IN ('PENDING', 'ENQUEUED', 'DELAYED', 'PAUSED')
      AND (:application_name IS NULL
           OR application_name = :application_name OR application_name IS NULL)
    ORDER BY created_at, workflow_uuid LIMIT :batch_size)
RETURNING created_at
