-- online
-- Index only the forks: "forks of X" stays fast while the index stays small.

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_workflow_status_forked_from
    ON {{schema}}.workflow_status (forked_from)
    WHERE forked_from IS NOT NULL;
