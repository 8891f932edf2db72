-- Application versions are registered per application (NULL = unclaimed).

ALTER TABLE {{schema}}.application_versions
    ADD COLUMN IF NOT EXISTS application_name TEXT DEFAULT NULL;
