"""The soak's application: the workflows every executor process registers.

Three kinds, chosen by index (``kind_of``):

* ``chain(i)`` — five steps in a row; returns the sum of their values;
* ``pong(i)`` / ``ping(i)`` — a pair talking through messages: ping sends to pong, pong
  answers; each returns what it received;
* ``sleeper(i)`` — a step, a durable sleep of 1-3 s, a step.

Every step body first asks the database, on a connection of its own, whether its own
checkpoint already exists, and writes what it found to ``public.step_runs``: a body that
runs after its checkpoint committed is a violation the soak reports. Side-table writes
are retried until the database is back, like everything else.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import trio

from dbos_trio import DBOS, Config
from dbos_trio._pg.pool import Pool

APP_NAME = "soak"
APP_VERSION = "soak-1"
QUEUE = "soak"
STEPS = 5
RECV_TIMEOUT = 3600.0

SIDE_TABLE = """
CREATE TABLE IF NOT EXISTS public.step_runs (
    workflow_id text NOT NULL,
    step_id integer NOT NULL,
    pid integer NOT NULL,
    checkpointed_before boolean NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""

logger = logging.getLogger("chaos.app")


def kind_of(index: int) -> str:
    """Which workflow index ``index`` is (pairs take two consecutive indices)."""
    slot = index % 10
    if slot in (0, 1):
        return "pong" if slot == 0 else "ping"
    if slot == 2:
        return "sleeper"
    return "chain"


def step_value(index: int, step: int) -> int:
    return index * 10 + step


def expected_output(index: int) -> Any:
    kind = kind_of(index)
    if kind == "chain":
        return sum(step_value(index, s) for s in range(1, STEPS + 1))
    if kind == "ping":
        return f"pong:{index - 1}"
    if kind == "pong":
        return f"ping:{index + 1}"
    return step_value(index, 1) + step_value(index, 2)


def workflow_id(index: int) -> str:
    return f"soak-{index:06d}"


class SideTable:
    """Statements on the soak's own table, through a small pool of this process's own."""

    def __init__(self, url: str) -> None:
        self._pool = Pool(url, max_size=4, connect_timeout=3.0)

    async def execute(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        delay = 0.05
        while True:
            try:
                async with self._pool.connection() as conn:
                    cur = await conn.execute(sql, params)
                    return await cur.fetchall() if cur.description else []
            except Exception as error:  # the database is down: wait for it, like DBOS does
                logger.debug("side table unavailable (%s): retrying", error)
                await trio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def close(self) -> None:
        await self._pool.close()


def build(
    url: str,
    executor_id: str,
    *,
    concurrency: int,
    step_seconds: float = 0.1,
    heartbeat_interval: float | None = None,
    adopt_after: float | None = None,
) -> tuple[DBOS, SideTable]:
    """The application one executor process runs (the fleet variant: a short heartbeat
    and automatic adoption after ``adopt_after`` seconds)."""
    fleet: dict[str, Any] = {}
    if heartbeat_interval is not None:
        fleet["heartbeat_interval"] = heartbeat_interval
    if adopt_after is not None:
        fleet["adopt_dead_executors_after"] = adopt_after
    dbos = DBOS(
        Config(
            app_name=APP_NAME,
            app_version=APP_VERSION,
            executor_id=executor_id,
            database_url=url,
            max_connections=10,
            **fleet,
        )
    )
    dbos.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=0.5)
    side = SideTable(url)
    pid = os.getpid()

    async def record_run() -> None:
        workflow, step = dbos.workflow_id, dbos.step_id
        found = await side.execute(
            "SELECT EXISTS (SELECT 1 FROM dbos.operation_outputs "
            "WHERE workflow_uuid = %s AND function_id = %s)",
            (workflow, step),
        )
        await side.execute(
            "INSERT INTO public.step_runs (workflow_id, step_id, pid, checkpointed_before) "
            "VALUES (%s, %s, %s, %s)",
            (workflow, step, pid, bool(found[0][0])),
        )

    @dbos.step()
    async def work(index: int, step: int) -> int:
        await record_run()
        await trio.sleep(step_seconds)  # work in flight when the chaos strikes
        return step_value(index, step)

    @dbos.workflow(name="chain")
    async def chain(index: int) -> int:
        return sum([await work(index, s) for s in range(1, STEPS + 1)])

    @dbos.workflow(name="ping")
    async def ping(index: int) -> Any:
        await work(index, 1)
        await dbos.send(workflow_id(index - 1), f"ping:{index}", "ball")
        return await dbos.recv("ball", timeout_seconds=RECV_TIMEOUT)

    @dbos.workflow(name="pong")
    async def pong(index: int) -> Any:
        received = await dbos.recv("ball", timeout_seconds=RECV_TIMEOUT)
        await work(index, 1)
        await dbos.send(workflow_id(index + 1), f"pong:{index}", "ball")
        return received

    @dbos.workflow(name="sleeper")
    async def sleeper(index: int) -> int:
        first = await work(index, 1)
        await dbos.sleep(1.0 + (index % 3))
        return first + await work(index, 2)

    return dbos, side
