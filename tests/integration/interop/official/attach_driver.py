"""The official ``dbos`` 3.4 side of the attach interop test (run with its own Python).

``attach <url> <app_name>``: launches an application whose workflow ``attach_parent``
enqueues ``attach_child`` with ``duplication_policy="return-existing"`` while another
``attach_child`` (``holder``) holds the deduplication id, so the parent attaches to it.
The holder waits for a message, sent only once the parent has attached. Prints the
parent's result and its recorded steps as one ``RESULT`` line.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def emit(payload: Any) -> None:
    sys.stdout.write("RESULT " + json.dumps(payload) + "\n")
    sys.stdout.flush()


def attach(url: str, app_name: str) -> None:
    from dbos import DBOS, SetEnqueueOptions, SetWorkflowID

    DBOS(config={"name": app_name, "system_database_url": url})

    @DBOS.workflow(name="attach_child")
    def attach_child(tag: str) -> str:
        DBOS.recv("go", timeout_seconds=60)
        return f"{tag}-done"

    queues: dict[str, Any] = {}  # registered once launched (queues live in the database)

    @DBOS.workflow(name="attach_parent")
    def attach_parent(tag: str) -> str:
        with SetEnqueueOptions(deduplication_id="d", duplication_policy="return-existing"):
            handle = queues["q"].enqueue(attach_child, tag)
        result: str = handle.get_result(polling_interval_sec=0.1)
        return result

    DBOS.launch()
    try:
        queue = queues["q"] = DBOS.register_queue("attach_q", polling_interval_sec=0.1)
        with SetWorkflowID("holder"), SetEnqueueOptions(deduplication_id="d"):
            queue.enqueue(attach_child, "first")
        with SetWorkflowID("parent"):
            parent = DBOS.start_workflow(attach_parent, "second")
        deadline = time.monotonic() + 60
        while not DBOS.list_workflow_steps("parent"):  # attached: its first step is there
            if time.monotonic() > deadline:
                raise SystemExit("the parent never recorded its enqueue")
            time.sleep(0.05)
        DBOS.send("holder", "go", "go")
        result = parent.get_result(polling_interval_sec=0.1)
        steps = [
            [step["function_id"], step["function_name"], step["child_workflow_id"]]
            for step in DBOS.list_workflow_steps("parent")
        ]
        emit({"result": result, "steps": steps})
    finally:
        DBOS.destroy(destroy_registry=True)


if __name__ == "__main__":
    command, url, app_name = sys.argv[1:]
    if command != "attach":
        raise SystemExit(f"unknown command {command!r}")
    attach(url, app_name)
