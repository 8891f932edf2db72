-- A NOTIFY inside the writing transaction serializes every notifying commit on the server.
-- Stream writers now push their NOTIFYs from the application after commit, so drop the trigger.

-- begin listen_notify
DROP TRIGGER IF EXISTS dbos_streams_trigger ON {{schema}}.streams;
DROP FUNCTION IF EXISTS {{schema}}.streams_function();
-- end listen_notify
