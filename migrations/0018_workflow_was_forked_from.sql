-- Flag workflows that have been forked at least once, so listings can filter for the
-- originals of forks (forked_from marks the forks themselves).

ALTER TABLE {{schema}}.workflow_status
    ADD COLUMN was_forked_from BOOLEAN NOT NULL DEFAULT FALSE;
