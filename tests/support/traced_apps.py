"""The traced workflow a test and its subprocess both register (same names, same app).

``traced(n)`` (name ``otel.traced``): step ``otel.first`` returns n + 1 and sets
``first_done``; step ``otel.second`` awaits ``gate`` (if given) and doubles it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from dbos_trio import DBOS, Config

APP_NAME = "otel-tests"


@attrs.define
class TracedApp:
    dbos: DBOS
    traced: Callable[[int], Awaitable[int]]
    first_done: trio.Event


def build_traced_app(
    url: str,
    executor_id: str,
    provider: Any,
    *,
    gate: Callable[[], Awaitable[None]] | None = None,
    **config: Any,
) -> TracedApp:
    dbos = DBOS(
        Config(
            app_name=APP_NAME,
            database_url=url,
            app_version="v1",
            executor_id=executor_id,
            enable_otel=True,
            otel_tracer_provider=provider,
            **config,
        )
    )
    first_done = trio.Event()

    @dbos.step(name="otel.first")
    async def first(n: int) -> int:
        first_done.set()
        return n + 1

    @dbos.step(name="otel.second")
    async def second(n: int) -> int:
        if gate is not None:
            await gate()
        return n * 2

    @dbos.workflow(name="otel.traced")
    async def traced(n: int) -> int:
        return await second(await first(n))

    return TracedApp(dbos, traced, first_done)
