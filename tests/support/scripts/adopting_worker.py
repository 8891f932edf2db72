"""An executor of the adoption test: adopts the work of executors that went silent.

Usage: ``adopting_worker.py URL EXECUTOR_ID MODE [COUNT]``. Every mode launches the same
application (``Config(heartbeat_interval=0.2, adopt_dead_executors_after=1.0)``) with the
workflow ``adopt.job(i)``: step ``adopt.first``, then ``adopt.second``, then
``adopt.third``, each body logging to the side table first. Modes:

* ``victim``: starts ``COUNT`` jobs with ids ``adopt-<i>``; its jobs stop in the workflow
  body after their first step (between checkpoints, never inside a step), prints
  ``STARTED`` once every first step is checkpointed, and waits to be killed;
* ``survivor``: prints ``READY`` and serves (adopting silent executors' work) until
  SIGTERM;
* ``restart``: launches (recovering its own PENDING rows, if any), prints
  ``RECOVERED <n>`` with the count its launch re-enqueued, and serves until SIGTERM.
"""

from __future__ import annotations

import sys

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

from support.backends import query
from support.queue_apps import APP_NAME, _side_log
from support.queue_fixtures import SideTable


def build(url: str, executor_id: str, *, hold: bool) -> tuple[DBOS, object]:
    SideTable(url).create()
    dbos = DBOS(
        Config(
            app_name=APP_NAME,
            database_url=url,
            app_version="adopt-v1",
            executor_id=executor_id,
            heartbeat_interval=0.2,
            adopt_dead_executors_after=1.0,
        )
    )

    def step(label: str) -> object:
        @dbos.step(name=f"adopt.{label}")
        def body(workflow_id: str, i: int) -> str:
            _side_log(url, workflow_id, label, executor_id)
            return f"{label}-{i}"

        return body

    first, second, third = step("first"), step("second"), step("third")

    @dbos.workflow(name="adopt.job")
    async def job(i: int) -> list[str]:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        done = [await first(workflow_id, i)]  # type: ignore[operator]
        if hold:
            await trio.sleep_forever()  # the victim stops here, between checkpoints
        done.append(await second(workflow_id, i))  # type: ignore[operator]
        done.append(await third(workflow_id, i))  # type: ignore[operator]
        return done

    return dbos, job


async def main(url: str, executor_id: str, mode: str, count: int) -> None:
    dbos, job = build(url, executor_id, hold=mode == "victim")
    async with dbos.launched():
        if mode == "victim":
            for i in range(count):
                with SetWorkflowID(f"adopt-{i}"):
                    await dbos.start_workflow(job, i)  # type: ignore[arg-type]
            while True:
                rows = await query(
                    url,
                    "SELECT count(*) FROM {t}operation_outputs WHERE function_name = %s",
                    "adopt.first",
                )
                if int(rows[0][0]) >= count:
                    break
                await trio.sleep(0.05)
            print("STARTED", flush=True)
        elif mode == "restart":
            executor = dbos._slot.executor
            assert executor is not None
            print(f"RECOVERED {executor.recovered_count}", flush=True)
        else:
            print("READY", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    jobs = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], jobs)
