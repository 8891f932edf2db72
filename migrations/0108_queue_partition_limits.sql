-- Per-partition limits for partitioned queues; setting any of them partitions the queue, and
-- each applies to every partition separately.

ALTER TABLE {{schema}}.queues ADD COLUMN IF NOT EXISTS partition_concurrency INT4 DEFAULT NULL;
ALTER TABLE {{schema}}.queues
    ADD COLUMN IF NOT EXISTS partition_worker_concurrency INT4 DEFAULT NULL;
ALTER TABLE {{schema}}.queues
    ADD COLUMN IF NOT EXISTS partition_rate_limit_max INT4 DEFAULT NULL;
ALTER TABLE {{schema}}.queues
    ADD COLUMN IF NOT EXISTS partition_rate_limit_period_sec DOUBLE PRECISION DEFAULT NULL;
