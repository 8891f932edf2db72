-- Partitioned queues: the partition a queued workflow belongs to.
ALTER TABLE workflow_status ADD COLUMN queue_partition_key TEXT;
