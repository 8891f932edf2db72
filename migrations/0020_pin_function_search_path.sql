-- Pin the search_path of every DBOS function to pg_catalog (then pg_temp), so a caller's
-- search_path can neither break them nor substitute look-alike objects for the ones they use.

ALTER FUNCTION {{schema}}.enqueue_workflow(
    TEXT, TEXT, JSON[], JSON, TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT, TEXT, INT4, TEXT
) SET search_path = pg_catalog, pg_temp;

ALTER FUNCTION {{schema}}.send_message(TEXT, JSON, TEXT, TEXT)
    SET search_path = pg_catalog, pg_temp;

-- begin listen_notify
ALTER FUNCTION {{schema}}.notifications_function() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION {{schema}}.workflow_events_function() SET search_path = pg_catalog, pg_temp;
-- end listen_notify
