"""Run one fan-out workflow, then wait to be killed.

Used by the fan-out crash test: it starts this script, waits until a chosen number of
the workflow's steps are checkpointed, SIGKILLs it, and recovers the workflow in a fresh
launch. Usage: ``fanout_crash.py URL EXECUTOR_ID WORKFLOW_ID PATTERN``.
"""

from __future__ import annotations

import sys

import trio

from dbos_trio import SetWorkflowID

from support.fanout_apps import build_fanout_app


async def main(url: str, executor_id: str, workflow_id: str, pattern: str) -> None:
    app = build_fanout_app(url, executor_id=executor_id, max_jitter=0.02)
    async with app.dbos.launched():
        with SetWorkflowID(workflow_id):
            await app.dbos.start_workflow(app.fanout, pattern)
        print("STARTED", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:5])
