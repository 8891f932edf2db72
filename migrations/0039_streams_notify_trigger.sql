-- Wake stream readers: every stream write NOTIFYs 'workflow::key' on the streams channel.
-- (Short-lived: migration 43 moves this NOTIFY out of the write transaction.)

-- begin listen_notify
CREATE OR REPLACE FUNCTION {{schema}}.streams_function()
RETURNS TRIGGER
LANGUAGE plpgsql
AS $dbos_trigger$
BEGIN
    PERFORM pg_notify('dbos_streams_channel', NEW.workflow_uuid || '::' || NEW.key);
    RETURN NEW;
END
$dbos_trigger$;

ALTER FUNCTION {{schema}}.streams_function() SET search_path = pg_catalog, pg_temp;

DROP TRIGGER IF EXISTS dbos_streams_trigger ON {{schema}}.streams;
CREATE TRIGGER dbos_streams_trigger
    AFTER INSERT ON {{schema}}.streams
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.streams_function();
-- end listen_notify
