-- Single-execution guard: a token naming the execution that currently owns the workflow,
-- so a second executor that starts the same workflow ID can tell it is not the owner.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN owner_xid TEXT DEFAULT NULL;
