-- Keep every set_event per step (workflow_events only holds the latest value), so fork and
-- rewind can rebuild the events a workflow had at any step; and record which step wrote
-- each stream entry for the same reason.

CREATE TABLE {{schema}}.workflow_events_history (
    workflow_uuid  TEXT NOT NULL,
    function_id    INT4 NOT NULL,
    key            TEXT NOT NULL,
    value          TEXT NOT NULL,
    PRIMARY KEY (workflow_uuid, function_id, key),
    CONSTRAINT workflow_events_history_workflow_uuid_fkey
        FOREIGN KEY (workflow_uuid) REFERENCES {{schema}}.workflow_status (workflow_uuid)
        ON UPDATE CASCADE ON DELETE CASCADE
);

ALTER TABLE {{schema}}.streams ADD COLUMN function_id INT4 NOT NULL DEFAULT 0;
