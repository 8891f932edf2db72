-- First migration of the block every SDK numbers identically. Several applications may share
-- one system database: each workflow records its owning application (NULL = unclaimed, which
-- any application may run and see). One table per migration, so a busy table holds up only
-- its own migration's lock.

ALTER TABLE {{schema}}.workflow_status
    ADD COLUMN IF NOT EXISTS application_name TEXT DEFAULT NULL;
