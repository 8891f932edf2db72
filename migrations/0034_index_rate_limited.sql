-- online
-- The rate limiter counts recent rate-limited starts per queue; index only those rows.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_rate_limited
    ON {{schema}}.workflow_status (queue_name, started_at_epoch_ms)
    WHERE rate_limited = TRUE;
