"""An executor of the fleet outage test: serves the queue ``fleet`` through a proxy.

Usage: ``fleet_worker.py PROXIED_URL DIRECT_URL EXECUTOR_ID``. Launches the application
``fleet-app`` with ``Config(heartbeat_interval=1.0, adopt_dead_executors_after=5.0)`` on
``PROXIED_URL`` (the system database, reached through the test's outage proxy), declares the
queue ``fleet`` with worker concurrency 1, prints ``READY`` and serves until SIGTERM. The
workflow ``fleet.job`` runs three steps; each step body logs to the side table over
``DIRECT_URL`` (never cut) and then works for 0.4 s, so an outage lands mid-step.
"""

from __future__ import annotations

import sys
import time

import trio

from dbos_trio import DBOS, Config

from support.queue_apps import _side_log


def build(proxied_url: str, direct_url: str, executor_id: str) -> DBOS:
    dbos = DBOS(
        Config(
            app_name="fleet-app",
            database_url=proxied_url,
            app_version="fleet-v1",
            executor_id=executor_id,
            heartbeat_interval=1.0,
            adopt_dead_executors_after=5.0,
        )
    )
    dbos.register_queue("fleet", worker_concurrency=1, polling_interval_sec=0.2)

    def step(label: str) -> object:
        @dbos.step(name=f"fleet.{label}")
        def body(workflow_id: str) -> str:
            _side_log(direct_url, workflow_id, label, executor_id)
            time.sleep(0.4)
            return label

        return body

    steps = [step(label) for label in ("one", "two", "three")]

    @dbos.workflow(name="fleet.job")
    async def job() -> list[str]:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return [await s(workflow_id) for s in steps]  # type: ignore[operator]

    return dbos


async def main(proxied_url: str, direct_url: str, executor_id: str) -> None:
    dbos = build(proxied_url, direct_url, executor_id)
    async with dbos.launched():
        print("READY", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
