-- Partitioned queues: the key a queued workflow is partitioned by, so concurrency limits can
-- apply per partition rather than per queue.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN queue_partition_key TEXT;
