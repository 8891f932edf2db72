-- Same as 43 for events: set_event NOTIFYs from the application after commit. The messages
-- trigger stays, because messages can come from processes with no notifier (send_message).

-- begin listen_notify
DROP TRIGGER IF EXISTS dbos_workflow_events_trigger ON {{schema}}.workflow_events;
DROP FUNCTION IF EXISTS {{schema}}.workflow_events_function();
-- end listen_notify
