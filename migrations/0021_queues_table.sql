-- Queue configuration lives in the database, so it can change at run time and every
-- executor (in any language) dequeues with the same limits.

CREATE TABLE {{schema}}.queues (
    queue_id               TEXT PRIMARY KEY DEFAULT gen_random_uuid()::TEXT,
    name                   TEXT NOT NULL UNIQUE,
    concurrency            INT4,
    worker_concurrency     INT4,
    rate_limit_max         INT4,
    rate_limit_period_sec  DOUBLE PRECISION,
    priority_enabled       BOOLEAN NOT NULL DEFAULT FALSE,
    partition_queue        BOOLEAN NOT NULL DEFAULT FALSE,
    polling_interval_sec   DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    created_at             BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT,
    updated_at             BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT
);
