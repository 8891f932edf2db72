"""Applications shared by the queue/recovery tests and the helper scripts they start.

A test and a subprocess must register the same workflows under the same names (and the
same application name and version) to run each other's rows, so both build them here.
Step bodies log to the :class:`~support.queue_fixtures.SideTable` on their own connection.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from dbos_trio import DBOS, Config
from dbos_trio._core.admission import RateLimit

APP_NAME = "wf-tests"  # the application name of support.dbos_fixtures.make_dbos
APP_VERSION = "v1"


def _side_log(url: str, workflow_id: str | None, label: str, value: str | None = None) -> int:
    # Imported lazily: queue_fixtures imports pytest, which helper scripts need not load.
    from support.queue_fixtures import SideTable

    return SideTable(url).log(workflow_id, label, value)


def _side_end(url: str, row_id: int) -> None:
    from support.queue_fixtures import SideTable

    SideTable(url).end(row_id)


@attrs.define
class App:
    """A DBOS instance with the shared workflows registered on it."""

    dbos: DBOS
    three_steps: Callable[[int], Awaitable[str]]
    hold: Callable[[float], Awaitable[str]]
    queues: dict[str, Any]
    wait_for_go: Callable[[], Awaitable[str]]


def queue_options(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``register_queue`` keyword arguments from a JSON-friendly spec (limiters as pairs)."""
    options = dict(spec)
    for field in ("limiter", "partition_limiter"):
        if options.get(field) is not None:
            limit, period = options[field]
            options[field] = RateLimit(limit=limit, period=period)
    return options


def build_app(
    url: str,
    *,
    executor_id: str,
    tag: str,
    step2_gate: Callable[[], Awaitable[None]] | None = None,
    queues: Mapping[str, Mapping[str, Any]] | None = None,
    listen_queues: list[str] | None = None,
    app_version: str = APP_VERSION,
) -> App:
    """Register the shared workflows on a new DBOS for ``url``.

    * ``three_steps(n)`` (name ``qa.three_steps``): step 1 returns n + 1, step 2 doubles it
      (after awaiting ``step2_gate`` if given) and appends ``tag``, step 3 formats the
      result; each step body logs its execution to the side table first.
    * ``hold(seconds)`` (name ``qa.hold``): one step that logs a row with start and end
      times around a sleep, for measuring how many executions overlapped.
    * ``wait_for_go()`` (name ``qa.wait_for_go``): waits for a message on topic ``go``,
      holding its queue slot until then.
    """
    from support.queue_fixtures import SideTable

    SideTable(url).create()
    dbos = DBOS(
        Config(
            app_name=APP_NAME,
            database_url=url,
            app_version=app_version,
            executor_id=executor_id,
            listen_queues=listen_queues,
        )
    )

    @dbos.step(name="qa.step1")
    def step1(workflow_id: str, n: int) -> int:
        _side_log(url, workflow_id, "step1", str(n))
        return n + 1

    @dbos.step(name="qa.step2")
    async def step2(workflow_id: str, n: int) -> str:
        await trio.to_thread.run_sync(_side_log, url, workflow_id, "step2", tag)
        if step2_gate is not None:
            await step2_gate()
        return f"{n * 2}{tag}"

    @dbos.step(name="qa.step3")
    def step3(workflow_id: str, value: str) -> str:
        _side_log(url, workflow_id, "step3", value)
        return f"result:{value}"

    @dbos.workflow(name="qa.three_steps")
    async def three_steps(n: int) -> str:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        first = await step1(workflow_id, n)
        second = await step2(workflow_id, first)
        return await step3(workflow_id, second)

    @dbos.step(name="qa.hold_step")
    async def hold_step(workflow_id: str, seconds: float) -> str:
        row_id = await trio.to_thread.run_sync(_side_log, url, workflow_id, "hold", tag)
        await trio.sleep(seconds)
        await trio.to_thread.run_sync(_side_end, url, row_id)
        return f"{tag}:{os.getpid()}"

    @dbos.workflow(name="qa.hold")
    async def hold(seconds: float) -> str:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return await hold_step(workflow_id, seconds)

    @dbos.workflow(name="qa.wait_for_go")
    async def wait_for_go() -> str:
        # Holds its queue slot until a "go" message arrives (another process sends it).
        await dbos.recv("go", timeout_seconds=600)
        return f"{tag}:{os.getpid()}"

    registered = {
        name: dbos.register_queue(name, **queue_options(spec))
        for name, spec in (queues or {}).items()
    }
    return App(
        dbos=dbos, three_steps=three_steps, hold=hold, queues=registered, wait_for_go=wait_for_go
    )


def expected_three_steps(n: int, tag: str) -> str:
    """What ``three_steps(n)`` returns when step 2 ran in an app tagged ``tag``."""
    return f"result:{(n + 1) * 2}{tag}"
