"""Start a workflow that sleeps durably, then wait to be killed.

Used by the sleep-recovery test: it starts this script, waits until the ``DBOS.sleep``
checkpoint exists, SIGKILLs the process, and recovers the workflow in a fresh launch
under the same executor id, app name and version.

Usage: ``time_sleeper.py URL APP_NAME WORKFLOW_ID SECONDS``. Prints ``STARTED`` once the
workflow is running and sleeps forever.
"""

from __future__ import annotations

import sys

import trio

from dbos_trio import DBOS, Config, SetWorkflowID


def build(url: str, app_name: str) -> tuple[DBOS, object]:
    """The app both processes run: same names, version and executor id."""
    dbos = DBOS(
        Config(
            app_name=app_name,
            database_url=url,
            app_version="v-sleeper",
            executor_id="sleeper-executor",
        )
    )

    @dbos.workflow(name="sleeper")
    async def sleeper(seconds: float) -> str:
        await dbos.sleep(seconds)
        return "woke"

    return dbos, sleeper


async def main(url: str, app_name: str, workflow_id: str, seconds: float) -> None:
    dbos, sleeper = build(url, app_name)
    async with dbos.launched():
        with SetWorkflowID(workflow_id):
            await dbos.start_workflow(sleeper, seconds)  # type: ignore[arg-type]
        print("STARTED", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
