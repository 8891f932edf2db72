"""Start workflows whose step 2 never returns, then wait to be killed.

Used by the crash-recovery test: it starts this script, waits until every workflow's
step 1 is checkpointed, SIGKILLs it, and recovers the workflows in a fresh launch.

Usage: ``recovery_crash.py URL EXECUTOR_ID COUNT PREFIX``. Starts ``COUNT`` workflows
``qa.three_steps(i)`` with ids ``PREFIX-i``, prints ``STARTED`` and sleeps forever.
"""

from __future__ import annotations

import sys

import trio

from dbos_trio import SetWorkflowID

from support.queue_apps import build_app


async def main(url: str, executor_id: str, count: int, prefix: str) -> None:
    app = build_app(url, executor_id=executor_id, tag="crashed", step2_gate=trio.sleep_forever)
    async with app.dbos.launched():
        for i in range(count):
            with SetWorkflowID(f"{prefix}-{i}"):
                await app.dbos.start_workflow(app.three_steps, i)
        print("STARTED", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
