"""A workflow that runs a step, waits (a durable sleep or a ``recv``), then runs another:
what a cancel from outside the process must stop before the second step's body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dbos_trio import DBOS


def build_probe(dbos: DBOS, ran: list[str]) -> Callable[[str], Awaitable[str]]:
    """Register ``probe(wait)`` on ``dbos``; step bodies append their labels to ``ran``."""

    @dbos.step(name="probe_step")
    async def step(label: str) -> str:
        ran.append(label)
        return label

    @dbos.workflow(name="probe")
    async def probe(wait: str) -> str:
        await step("before")
        if wait == "sleep":
            await dbos.sleep(120)
        else:
            await dbos.recv("never", timeout_seconds=120)
        return await step("after")

    return probe
