"""The official ``dbos`` 3.4 package's side of the interop tests.

Run ONLY with the Python of the separate virtualenv that holds ``dbos==3.4.*`` (see
``tests/integration/interop/conftest.py``); it imports nothing from dbos_trio or from the test
suite, so the two packages' dependencies never meet in one interpreter.

Each command prints one line ``RESULT <json>`` on stdout (logs may surround it):

* ``launch URL [--verify-only]``: launch an official DBOS app on URL (``run_migrations``
  off with ``--verify-only``), run a trivial workflow, report the migration version it
  sees and the workflow's result.
* ``client-enqueue URL QUEUE WORKFLOW SERIALIZATION ARGS_JSON``: the official
  ``DBOSClient`` enqueues WORKFLOW by name (SERIALIZATION ``default`` or ``portable``) and
  waits for its result (or error).
* ``client-peer URL WORKFLOW_ID``: the official client reads the workflow's ``status``
  event and ``items`` stream, sends it a portable message on ``inbox``, and waits for its
  result.
* ``serve URL APP_NAME``: an official executor serving queue ``official_q`` (and running
  the scheduled workflow ``official_tick``); prints
  ``READY`` once launched and runs until its standard input closes.
* ``schedule-create URL APP_NAME NAME WORKFLOW CRON CONTEXT_JSON``: the official
  ``DBOSClient`` (acting for APP_NAME) creates a schedule of WORKFLOW.
* ``schedule-list URL APP_NAME``: the official ``DBOSClient`` lists APP_NAME's schedules.
* ``debounce URL APP_NAME WORKFLOW QUEUE KEY PERIOD ARG_JSON``: the official
  ``DebouncerClient`` bounces KEY once; reports the workflow id it coalesced onto.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

OFFICIAL_QUEUE = "official_q"


def emit(payload: Any) -> None:
    sys.stdout.write("RESULT " + json.dumps(payload, default=repr) + "\n")
    sys.stdout.flush()


def describe(error: BaseException) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "message": str(error),
        "name": getattr(error, "name", None),
    }


def migration_version(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT max(version) FROM dbos.dbos_migrations").fetchone()
    assert row is not None
    return int(row[0])


def serialization(choice: str) -> Any:
    from dbos._serialization import WorkflowSerializationFormat

    if choice == "portable":
        return WorkflowSerializationFormat.PORTABLE
    if choice == "default":
        return WorkflowSerializationFormat.DEFAULT
    raise SystemExit(f"unknown serialization {choice!r}")


def launch(url: str, verify_only: bool) -> None:
    from dbos import DBOS

    DBOS(
        config={
            "name": "official-launch",
            "system_database_url": url,
            "run_migrations": not verify_only,
        }
    )

    @DBOS.workflow(name="official_ping")
    def official_ping(text: str) -> str:
        return f"pong {text}"

    DBOS.launch()
    try:
        result = official_ping("from official")
        emit({"version": migration_version(url), "result": result})
    finally:
        DBOS.destroy(destroy_registry=True)


def client_enqueue(url: str, queue: str, workflow: str, choice: str, args_json: str) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url)
    try:
        options: Any = {
            "queue_name": queue,
            "workflow_name": workflow,
            "serialization_type": serialization(choice),
        }
        handle = client.enqueue(options, *json.loads(args_json))
        try:
            result = handle.get_result(polling_interval_sec=0.1)
        except Exception as error:
            emit({"workflow_id": handle.workflow_id, "error": describe(error)})
        else:
            emit({"workflow_id": handle.workflow_id, "result": result})
    finally:
        client.destroy()


def client_peer(url: str, workflow_id: str) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url)
    try:
        event = client.get_event(workflow_id, "status", timeout_seconds=20)
        items = list(client.read_stream(workflow_id, "items", polling_interval_sec=0.1))
        client.send(
            workflow_id,
            {"from": "official", "items": len(items)},
            "inbox",
            serialization_type=serialization("portable"),
        )
        result = client.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.1)
        emit({"event": event, "items": items, "result": result})
    finally:
        client.destroy()


def client_read(url: str, workflow_id: str) -> None:
    """What the official client reads of a finished workflow: its result, its inputs."""
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url)
    try:
        result = client.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.1)
        [status] = client.list_workflows(workflow_ids=[workflow_id], load_input=True)
        emit({"result": result, "input": status.input})
    finally:
        client.destroy()


def serve(url: str, app_name: str) -> None:
    from dbos import DBOS

    DBOS(config={"name": app_name, "system_database_url": url})

    @DBOS.workflow(name="official_add")
    def official_add(a: int, b: int) -> int:
        return a + b

    @DBOS.workflow(name="official_fail")
    def official_fail(text: str) -> None:
        raise ValueError(text)

    @DBOS.workflow(name="official_publisher", serialization_type=serialization("portable"))
    def official_publisher(label: str) -> Any:
        DBOS.set_event("status", {"label": label, "side": "official"})
        DBOS.write_stream("items", {"n": 1})
        DBOS.write_stream("items", {"n": 2})
        DBOS.close_stream("items")
        message = DBOS.recv("inbox", timeout_seconds=30)
        return {"label": label, "message": message}

    @DBOS.workflow(name="official_tick")
    def official_tick(scheduled_time: Any, context: Any) -> str:
        return f"{scheduled_time.isoformat()} {context}"

    DBOS.launch()
    try:
        # Queues live in the database in 3.x: declared once launched, picked up at once.
        DBOS.register_queue(OFFICIAL_QUEUE, polling_interval_sec=0.1)
        sys.stdout.write("READY\n")
        sys.stdout.flush()
        sys.stdin.read()  # until the test closes our standard input
    finally:
        DBOS.destroy(destroy_registry=True)


def schedule_create(
    url: str, app_name: str, name: str, workflow: str, cron: str, context_json: str
) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url, application_name=app_name)
    try:
        client.create_schedule(
            schedule_name=name,
            workflow_name=workflow,
            schedule=cron,
            context=json.loads(context_json),
        )
        emit({"created": name})
    finally:
        client.destroy()


def schedule_list(url: str, app_name: str) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url, application_name=app_name)
    try:
        emit([dict(schedule) for schedule in client.list_schedules(application_name=app_name)])
    finally:
        client.destroy()


def debounce(
    url: str, app_name: str, workflow: str, queue: str, key: str, period: str, arg_json: str
) -> None:
    from dbos import DBOSClient, DebouncerClient

    client = DBOSClient(system_database_url=url, application_name=app_name)
    try:
        debouncer = DebouncerClient(client, {"workflow_name": workflow, "queue_name": queue})
        handle = debouncer.debounce(key, float(period), json.loads(arg_json))
        emit({"workflow_id": handle.workflow_id})
    finally:
        client.destroy()


def main(argv: list[str]) -> None:
    command, url, *rest = argv
    if command == "launch":
        launch(url, verify_only="--verify-only" in rest)
    elif command == "client-enqueue":
        queue, workflow, choice, args_json = rest
        client_enqueue(url, queue, workflow, choice, args_json)
    elif command == "client-peer":
        (workflow_id,) = rest
        client_peer(url, workflow_id)
    elif command == "client-read":
        (workflow_id,) = rest
        client_read(url, workflow_id)
    elif command == "serve":
        (app_name,) = rest
        serve(url, app_name)
    elif command == "schedule-create":
        schedule_create(url, *rest)
    elif command == "schedule-list":
        (app_name,) = rest
        schedule_list(url, app_name)
    elif command == "debounce":
        debounce(url, *rest)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
