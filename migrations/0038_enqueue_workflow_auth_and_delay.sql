-- enqueue_workflow learns the authenticated user and roles to run the workflow as, and an
-- optional delay (the row starts DELAYED). Adding parameters makes a new overload, so the
-- 13-argument form is dropped first; the new form gets the pinned search_path of migration 20.

DROP FUNCTION IF EXISTS {{schema}}.enqueue_workflow(
    TEXT, TEXT, JSON[], JSON, TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT, TEXT, INT4, TEXT
);

CREATE OR REPLACE FUNCTION {{schema}}.enqueue_workflow(
    workflow_name         TEXT,
    queue_name            TEXT,
    positional_args       JSON[] DEFAULT ARRAY[]::JSON[],
    named_args            JSON   DEFAULT '{}'::JSON,
    class_name            TEXT   DEFAULT NULL,
    config_name           TEXT   DEFAULT NULL,
    workflow_id           TEXT   DEFAULT NULL,
    app_version           TEXT   DEFAULT NULL,
    timeout_ms            BIGINT DEFAULT NULL,
    deadline_epoch_ms     BIGINT DEFAULT NULL,
    deduplication_id      TEXT   DEFAULT NULL,
    priority              INT4   DEFAULT NULL,
    queue_partition_key   TEXT   DEFAULT NULL,
    authenticated_user    TEXT   DEFAULT NULL,
    authenticated_roles   TEXT   DEFAULT NULL,
    delay_until_epoch_ms  BIGINT DEFAULT NULL
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
    ELSIF delay_until_epoch_ms < 0 THEN
        RAISE EXCEPTION 'delay_until_epoch_ms must be >= 0';
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
        authenticated_user, authenticated_roles, delay_until_epoch_ms,
        created_at, updated_at
    )
    VALUES (
        l_id,
        CASE WHEN delay_until_epoch_ms IS NULL THEN 'ENQUEUED' ELSE 'DELAYED' END,
        workflow_name, class_name, config_name,
        queue_name, deduplication_id, coalesce(priority, 0), queue_partition_key,
        app_version,
        json_build_object('positionalArgs', positional_args, 'namedArgs', named_args)::TEXT,
        'portable_json', gen_random_uuid()::TEXT,
        0, timeout_ms, deadline_epoch_ms,
        authenticated_user, authenticated_roles, delay_until_epoch_ms,
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

ALTER FUNCTION {{schema}}.enqueue_workflow(
    TEXT, TEXT, JSON[], JSON, TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT, TEXT, INT4, TEXT,
    TEXT, TEXT, BIGINT
) SET search_path = pg_catalog, pg_temp;
