"""The official ``dbos`` 3.4 side of the issue-17 interop tests (attributes, rewind,
send_bulk). Run ONLY with the Python of the official package's virtualenv (see
``tests/integration/interop/conftest.py``); it imports nothing from dbos_trio.

Each command prints one line ``RESULT <json>`` on stdout:

* ``list-attributes URL APP ATTRIBUTES_JSON``: the official ``DBOSClient`` (for APP) lists
  the workflows whose attributes contain ATTRIBUTES_JSON: their ids and attributes.
* ``merge-attributes URL WORKFLOW_ID ATTRIBUTES_JSON``: the official client merges
  ATTRIBUTES_JSON into the workflow's attributes.
* ``rewind URL WORKFLOW_ID START_STEP``: the official client rewinds the workflow.
* ``outcome URL WORKFLOW_ID``: the official client waits for the workflow's result and
  reports it with its steps (id, name) and all of its events.
* ``send-bulk URL MESSAGES_JSON``: the official client sends ``[[destination, topic,
  message], ...]`` in one portable ``send_bulk``.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any


def emit(payload: Any) -> None:
    sys.stdout.write("RESULT " + json.dumps(payload, default=repr) + "\n")
    sys.stdout.flush()


def client(url: str, app: str | None = None) -> Any:
    from dbos import DBOSClient

    return DBOSClient(system_database_url=url, application_name=app)


def list_attributes(url: str, app: str, attributes_json: str) -> None:
    c = client(url, app)
    try:
        found = c.list_workflows(attributes=json.loads(attributes_json))
        emit([[w.workflow_id, w.attributes] for w in found])
    finally:
        c.destroy()


def merge_attributes(url: str, workflow_id: str, attributes_json: str) -> None:
    c = client(url)
    try:
        c.update_workflow_attributes(workflow_id, json.loads(attributes_json), merge=True)
        emit({"merged": workflow_id})
    finally:
        c.destroy()


def rewind(url: str, workflow_id: str, start_step: str) -> None:
    c = client(url)
    try:
        handle = c.rewind_workflow(workflow_id, start_step=int(start_step))
        emit({"rewound": handle.workflow_id})
    finally:
        c.destroy()


def outcome(url: str, workflow_id: str) -> None:
    c = client(url)
    try:
        result = c.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.1)
        steps = [[s["function_id"], s["function_name"]] for s in c.list_workflow_steps(workflow_id)]
        status = c.retrieve_workflow(workflow_id).get_status()
        emit({"result": result, "steps": steps, "status": status.status})
    finally:
        c.destroy()


def send_bulk(url: str, messages_json: str) -> None:
    from dbos._serialization import WorkflowSerializationFormat
    from dbos._sys_db import SendMessage

    c = client(url)
    try:
        messages = [
            SendMessage(destination_id=d, topic=t, message=m)
            for d, t, m in json.loads(messages_json)
        ]
        c.send_bulk(messages, serialization_type=WorkflowSerializationFormat.PORTABLE)
        emit({"sent": len(messages)})
    finally:
        c.destroy()


def main(argv: list[str]) -> None:
    command, url, *rest = argv
    commands = {
        "list-attributes": list_attributes,
        "merge-attributes": merge_attributes,
        "rewind": rewind,
        "outcome": outcome,
        "send-bulk": send_bulk,
    }
    if command not in commands:
        raise SystemExit(f"unknown command {command!r}")
    commands[command](url, *rest)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
