-- Remember which workflow a fork was copied from, and make "forks of X" a cheap lookup.
-- (Migrations 22/23 rebuild the index as a partial one.)

ALTER TABLE {{schema}}.workflow_status ADD COLUMN forked_from TEXT;

CREATE INDEX idx_workflow_status_forked_from ON {{schema}}.workflow_status (forked_from);
