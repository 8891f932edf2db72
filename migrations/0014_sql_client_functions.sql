-- A client API in plain SQL, so any language (or psql) can enqueue a workflow and send it a
-- message without a DBOS SDK. Everything these functions write is portable JSON, which every
-- SDK can read. Later migrations (38, 105, 113) replace enqueue_workflow as columns appear.

CREATE FUNCTION {{schema}}.enqueue_workflow(
    workflow_name        TEXT,
    queue_name           TEXT,
    positional_args      JSON[] DEFAULT ARRAY[]::JSON[],
    named_args           JSON   DEFAULT '{}'::JSON,
    class_name           TEXT   DEFAULT NULL,
    config_name          TEXT   DEFAULT NULL,
    workflow_id          TEXT   DEFAULT NULL,
    app_version          TEXT   DEFAULT NULL,
    timeout_ms           BIGINT DEFAULT NULL,
    deadline_epoch_ms    BIGINT DEFAULT NULL,
    deduplication_id     TEXT   DEFAULT NULL,
    priority             INT4   DEFAULT NULL,
    queue_partition_key  TEXT   DEFAULT NULL
)
RETURNS TEXT
LANGUAGE plpgsql
AS $dbos_fn$
DECLARE
    -- Parameter names double as column names, so locals carry a distinct prefix.
    l_id      TEXT := workflow_id;
    l_now_ms  BIGINT := (EXTRACT(epoch FROM now()) * 1000)::BIGINT;
BEGIN
    IF coalesce(workflow_name, '') = '' THEN
        RAISE EXCEPTION 'Workflow name cannot be null or empty';
    ELSIF coalesce(queue_name, '') = '' THEN
        RAISE EXCEPTION 'Queue name cannot be null or empty';
    ELSIF named_args IS NOT NULL AND json_typeof(named_args) <> 'object' THEN
        RAISE EXCEPTION 'Named args must be a JSON object';
    ELSIF l_id = '' THEN
        RAISE EXCEPTION 'Workflow ID cannot be an empty string if provided.';
    END IF;

    IF l_id IS NULL THEN
        l_id := gen_random_uuid()::TEXT;
    END IF;

    -- Re-enqueueing an existing ID is idempotent: it only touches updated_at.
    INSERT INTO {{schema}}.workflow_status (
        workflow_uuid, status, name, class_name, config_name,
        queue_name, deduplication_id, priority, queue_partition_key,
        application_version, inputs, serialization, owner_xid,
        recovery_attempts, workflow_timeout_ms, workflow_deadline_epoch_ms,
        created_at, updated_at
    )
    VALUES (
        l_id, 'ENQUEUED', workflow_name, class_name, config_name,
        queue_name, deduplication_id, coalesce(priority, 0), queue_partition_key,
        app_version,
        json_build_object('positionalArgs', positional_args, 'namedArgs', named_args)::TEXT,
        'portable_json', gen_random_uuid()::TEXT,
        0, timeout_ms, deadline_epoch_ms,
        l_now_ms, l_now_ms
    )
    ON CONFLICT (workflow_uuid) DO UPDATE SET updated_at = EXCLUDED.updated_at;

    RETURN l_id;
EXCEPTION
    -- The only unique key the upsert can still hit is (queue_name, deduplication_id).
    WHEN unique_violation THEN
        RAISE EXCEPTION USING
            ERRCODE = 'unique_violation',
            MESSAGE = 'DBOS queue duplicated',
            DETAIL = format('deduplication ID %s is already taken on queue %s (workflow %s)',
                            deduplication_id, queue_name, l_id);
END
$dbos_fn$;

CREATE FUNCTION {{schema}}.send_message(
    destination_id  TEXT,
    message         JSON,
    topic           TEXT DEFAULT NULL,
    message_id      TEXT DEFAULT NULL
)
RETURNS VOID
LANGUAGE plpgsql
AS $dbos_fn$
BEGIN
    -- A message without a topic is stored under the shared sentinel topic, never NULL; a
    -- repeated message_id is an idempotent resend and is ignored.
    INSERT INTO {{schema}}.notifications (
        message_uuid, destination_uuid, topic, message, serialization
    )
    VALUES (
        coalesce(message_id, gen_random_uuid()::TEXT),
        destination_id,
        coalesce(topic, '__null__topic__'),
        message,
        'portable_json'
    )
    ON CONFLICT (message_uuid) DO NOTHING;
EXCEPTION
    WHEN foreign_key_violation THEN
        RAISE EXCEPTION USING
            ERRCODE = 'foreign_key_violation',
            MESSAGE = 'DBOS non-existent workflow',
            DETAIL = format('there is no workflow %s to send the message to', destination_id);
END
$dbos_fn$;
