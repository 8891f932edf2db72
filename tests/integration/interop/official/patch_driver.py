"""The official ``dbos`` 3.4 package's side of the patching interop tests.

Run ONLY with the Python of the virtualenv that holds ``dbos==3.4.*`` (see
``tests/integration/interop/conftest.py``); it imports nothing from dbos_trio or the test
suite. Each command prints one line ``RESULT <json>``.

The application (mirrored by the test's dbos_trio application: same app name, pinned
version, workflow and step names) has one workflow, ``patch_interop(tag)``:

* generation ``old``: step ``patch_old(tag)``, then step ``patch_after(tag)``;
* generation ``patched``: ``patch_new(tag)`` if ``DBOS.patch("fix")`` else
  ``patch_old(tag)``, then ``patch_after(tag)``.

It returns ``[first, after]``; each step returns ``"<name>-<tag>"``.

Commands:

* ``crash URL WORKFLOW_ID GENERATION``: start the workflow; the ``patch_after`` step's body
  kills the process (``os._exit``) before it returns, so the history holds everything
  before it and nothing after.
* ``recover URL WORKFLOW_ID GENERATION``: launch, resume the PENDING workflow (it belongs
  to another executor), and report its result and how many times each step body ran.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

APP_NAME = "patch-interop"
APP_VERSION = "patch-v1"
RUNS: dict[str, int] = {"patch_old": 0, "patch_new": 0, "patch_after": 0}


def emit(payload: Any) -> None:
    sys.stdout.write("RESULT " + json.dumps(payload, default=repr) + "\n")
    sys.stdout.flush()


def build(url: str, generation: str, crash: bool) -> Any:
    from dbos import DBOS

    DBOS(
        config={
            "name": APP_NAME,
            "system_database_url": url,
            "application_version": APP_VERSION,
            "log_level": "WARNING",
        }
    )

    @DBOS.step(name="patch_old")
    def patch_old(tag: str) -> str:
        RUNS["patch_old"] += 1
        return f"patch_old-{tag}"

    @DBOS.step(name="patch_new")
    def patch_new(tag: str) -> str:
        RUNS["patch_new"] += 1
        return f"patch_new-{tag}"

    @DBOS.step(name="patch_after")
    def patch_after(tag: str) -> str:
        RUNS["patch_after"] += 1
        if crash:
            emit({"runs": RUNS})
            os._exit(0)  # a crash: nothing after this step's start is recorded
        return f"patch_after-{tag}"

    @DBOS.workflow(name="patch_interop")
    def patch_interop(tag: str) -> list[str]:
        patched = generation == "patched" and DBOS.patch("fix")
        first = patch_new(tag) if patched else patch_old(tag)
        return [first, patch_after(tag)]

    return patch_interop


def crash(url: str, workflow_id: str, generation: str) -> None:
    from dbos import DBOS, SetWorkflowID

    workflow = build(url, generation, crash=True)
    DBOS.launch()
    with SetWorkflowID(workflow_id):
        workflow("official")
    raise SystemExit("the workflow returned instead of crashing")


def recover(url: str, workflow_id: str, generation: str) -> None:
    from dbos import DBOS

    build(url, generation, crash=False)
    DBOS.launch()
    try:
        DBOS.resume_workflow(workflow_id)
        result = DBOS.retrieve_workflow(workflow_id).get_result(polling_interval_sec=0.1)
        emit({"result": result, "runs": RUNS})
    finally:
        DBOS.destroy(destroy_registry=True)


def main(argv: list[str]) -> None:
    command, url, workflow_id, generation = argv
    if command == "crash":
        crash(url, workflow_id, generation)
    elif command == "recover":
        recover(url, workflow_id, generation)
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
