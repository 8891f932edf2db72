-- Base system schema: one row per workflow (workflow_status), its step checkpoints
-- (operation_outputs), messages (notifications), events (workflow_events), streams, and
-- the legacy event_dispatch_kv table every SDK keeps. Later migrations grow these in place,
-- so column order here is part of the shared contract.

CREATE TABLE {{schema}}.workflow_status (
    workflow_uuid               TEXT PRIMARY KEY,
    status                      TEXT,
    name                        TEXT,
    authenticated_user          TEXT,
    assumed_role                TEXT,
    authenticated_roles         TEXT,
    request                     TEXT,
    output                      TEXT,
    error                       TEXT,
    executor_id                 TEXT,
    created_at                  BIGINT NOT NULL
                                DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT,
    updated_at                  BIGINT NOT NULL
                                DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT,
    application_version         TEXT,
    application_id              TEXT,
    class_name                  VARCHAR(255) DEFAULT NULL,
    config_name                 VARCHAR(255) DEFAULT NULL,
    recovery_attempts           BIGINT DEFAULT 0,
    queue_name                  TEXT,
    workflow_timeout_ms         BIGINT,
    workflow_deadline_epoch_ms  BIGINT,
    inputs                      TEXT,
    started_at_epoch_ms         BIGINT,
    deduplication_id            TEXT,
    priority                    INT4 NOT NULL DEFAULT 0,
    -- Replaced by the partial unique index of migration 27 and dropped by migration 28.
    CONSTRAINT uq_workflow_status_queue_name_dedup_id UNIQUE (queue_name, deduplication_id)
);

CREATE INDEX workflow_status_created_at_index ON {{schema}}.workflow_status (created_at);
CREATE INDEX workflow_status_executor_id_index ON {{schema}}.workflow_status (executor_id);
CREATE INDEX workflow_status_status_index ON {{schema}}.workflow_status (status);

CREATE TABLE {{schema}}.operation_outputs (
    workflow_uuid      TEXT NOT NULL,
    function_id        INT4 NOT NULL,
    function_name      TEXT NOT NULL DEFAULT '',
    output             TEXT,
    error              TEXT,
    child_workflow_id  TEXT,
    PRIMARY KEY (workflow_uuid, function_id),
    -- Migration 112 drops this constraint by exactly this name.
    CONSTRAINT operation_outputs_workflow_uuid_fkey
        FOREIGN KEY (workflow_uuid) REFERENCES {{schema}}.workflow_status (workflow_uuid)
        ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE TABLE {{schema}}.notifications (
    message_uuid         TEXT NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    destination_uuid     TEXT NOT NULL,
    topic                TEXT,
    message              TEXT NOT NULL,
    created_at_epoch_ms  BIGINT NOT NULL DEFAULT (EXTRACT(epoch FROM now()) * 1000.0)::BIGINT,
    CONSTRAINT notifications_destination_uuid_fkey
        FOREIGN KEY (destination_uuid) REFERENCES {{schema}}.workflow_status (workflow_uuid)
        ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE INDEX idx_workflow_topic ON {{schema}}.notifications (destination_uuid, topic);

CREATE TABLE {{schema}}.workflow_events (
    workflow_uuid  TEXT NOT NULL,
    key            TEXT NOT NULL,
    value          TEXT NOT NULL,
    PRIMARY KEY (workflow_uuid, key),
    CONSTRAINT workflow_events_workflow_uuid_fkey
        FOREIGN KEY (workflow_uuid) REFERENCES {{schema}}.workflow_status (workflow_uuid)
        ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE TABLE {{schema}}.streams (
    workflow_uuid  TEXT NOT NULL,
    key            TEXT NOT NULL,
    value          TEXT NOT NULL,
    "offset"       INT4 NOT NULL,
    PRIMARY KEY (workflow_uuid, key, "offset"),
    CONSTRAINT streams_workflow_uuid_fkey
        FOREIGN KEY (workflow_uuid) REFERENCES {{schema}}.workflow_status (workflow_uuid)
        ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE TABLE {{schema}}.event_dispatch_kv (
    service_name      TEXT NOT NULL,
    workflow_fn_name  TEXT NOT NULL,
    key               TEXT NOT NULL,
    value             TEXT,
    update_seq        NUMERIC(38, 0),
    update_time       NUMERIC(38, 15),
    PRIMARY KEY (service_name, workflow_fn_name, key)
);

-- begin listen_notify
-- Wake receivers: every new message NOTIFYs 'destination::topic' on the notifications
-- channel once its transaction commits. (This trigger survives; see migration 44.)
CREATE OR REPLACE FUNCTION {{schema}}.notifications_function()
RETURNS TRIGGER
LANGUAGE plpgsql
AS $dbos_trigger$
BEGIN
    PERFORM pg_notify('dbos_notifications_channel', NEW.destination_uuid || '::' || NEW.topic);
    RETURN NEW;
END
$dbos_trigger$;

CREATE TRIGGER dbos_notifications_trigger
    AFTER INSERT ON {{schema}}.notifications
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.notifications_function();

-- Wake get_event waiters with 'workflow::key' (dropped again by migration 44).
CREATE OR REPLACE FUNCTION {{schema}}.workflow_events_function()
RETURNS TRIGGER
LANGUAGE plpgsql
AS $dbos_trigger$
BEGIN
    PERFORM pg_notify('dbos_workflow_events_channel', NEW.workflow_uuid || '::' || NEW.key);
    RETURN NEW;
END
$dbos_trigger$;

CREATE TRIGGER dbos_workflow_events_trigger
    AFTER INSERT ON {{schema}}.workflow_events
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.workflow_events_function();
-- end listen_notify
