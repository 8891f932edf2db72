"""The official ``dbos`` 3.4 client's side of the trace-propagation interop test.

Run ONLY with the Python of the official package's virtualenv (see ``conftest.py``); it
imports nothing from dbos_trio. That virtualenv has no OpenTelemetry, so the carrier is
written as the official SDK persists it — ``attributes["dbos.otelContext"]`` holding the
W3C ``traceparent`` — through the client's ``attributes`` enqueue option.

* ``enqueue-traced URL QUEUE WORKFLOW TRACEPARENT ARGS_JSON``: enqueue WORKFLOW by name
  with that carrier; print ``RESULT {"workflow_id": ...}`` without waiting for it.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(url: str, queue: str, workflow: str, traceparent: str, args_json: str) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url)
    try:
        options: Any = {
            "queue_name": queue,
            "workflow_name": workflow,
            "attributes": {"dbos.otelContext": {"traceparent": traceparent}},
        }
        handle = client.enqueue(options, *json.loads(args_json))
        sys.stdout.write("RESULT " + json.dumps({"workflow_id": handle.workflow_id}) + "\n")
    finally:
        client.destroy()


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    assert command == "enqueue-traced", command
    main(*rest)
