"""Check an upgrade before it ships: the whole loop, on SQLite files in the working directory.

    python examples/check_upgrade.py

Version A of an order workflow leaves work in flight: one order finished, one PENDING in
a three-day durable sleep, one PENDING in ``recv`` waiting for a confirmation, one PENDING
in the middle of a fan-out (a durable nursery, one of whose parts still sleeps). Version B
swaps two steps: ``check`` names every affected workflow and the first durable call that
differs. Version C makes the same swap behind ``dbos.patch``: ``check`` passes — against
the database, and against a bundle exported with ``dbos-trio workflow export`` and
imported into another SQLite file — and launching C completes every order.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
import trio.testing

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio.testing import check_upgrade, read_bundle, sqlite_url

PRODUCTION = sqlite_url(Path("production.sqlite"))
LAPTOP = sqlite_url(Path("laptop.sqlite"))
DAY = 86400.0


def build(version: str) -> tuple[DBOS, Any]:
    """The application at ``version`` (A, B or C): same names, different code."""
    dbos = DBOS(Config(app_name="orders", database_url=PRODUCTION, app_version="1"))

    @dbos.step(name="reserve")
    async def reserve(order: str) -> str:
        return f"reserved {order}"

    @dbos.step(name="charge")
    async def charge(order: str) -> str:
        return f"charged {order}"

    @dbos.step(name="pack")
    async def pack(part: str) -> str:
        return f"packed {part}"

    @dbos.step(name="ship")
    async def ship(order: str, note: str) -> str:
        return f"shipped {order} ({note})"

    @dbos.workflow(name="fulfil")
    async def fulfil(order: str, nap: float, parts: dict[str, float]) -> str:
        if version == "B":
            await charge(order)  # B charges before it reserves
            await reserve(order)
        elif version == "C" and await dbos.patch("charge-first"):
            await charge(order)
            await reserve(order)
        else:
            await reserve(order)
            await charge(order)

        async def pack_later(part: str, delay: float) -> None:
            await dbos.sleep(delay)
            await pack(part)
            await dbos.set_event(f"packed-{part}", True)

        async with dbos.open_nursery() as nursery:  # fan out
            for part, delay in parts.items():
                nursery.start_soon(pack_later, part, delay)
        await dbos.set_event("packed", True)
        await dbos.sleep(nap)
        note = await dbos.recv("confirm", timeout_seconds=7 * DAY)
        return await ship(order, note or "unconfirmed")

    return dbos, fulfil


async def record_version_a() -> None:
    dbos, fulfil = build("A")
    async with dbos.launched():
        with SetWorkflowID("done"):
            handle = await dbos.start_workflow(fulfil, "done", 0.0, {"lid": 0.0})
        await dbos.send("done", "ok", "confirm")
        print("A:", await handle.get_result())
        with SetWorkflowID("sleeping"):
            await dbos.start_workflow(fulfil, "sleeping", 3 * DAY, {"lid": 0.0})
        with SetWorkflowID("waiting"):
            await dbos.start_workflow(fulfil, "waiting", 0.0, {"lid": 0.0})
        with SetWorkflowID("fanning"):
            await dbos.start_workflow(fulfil, "fanning", 0.0, {"lid": 0.0, "box": 2 * DAY})
        for order in ("sleeping", "waiting"):
            await dbos.get_event(order, "packed", timeout_seconds=60)
        await dbos.get_event("fanning", "packed-lid", timeout_seconds=60)  # the box sleeps on
    print("A: the deploy stops here, leaving sleeping, waiting and fanning PENDING")


def cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dbos_trio.cli", *args], check=True)


async def main() -> None:
    await record_version_a()

    b, _ = build("B")
    report = await check_upgrade(b, PRODUCTION, finished=10)
    print("check B:")
    print(report.summary())

    c, _ = build("C")
    report = await check_upgrade(c, PRODUCTION, finished=10)
    print("check C:", "ok" if report.ok else "FAILED")

    # CI without access to production: export the in-flight work, check the bundle.
    cli("workflow", "export", "sleeping", "waiting", "fanning", "-s", PRODUCTION,
        "--output", "inflight.json")  # fmt: skip
    report = await check_upgrade(c, histories=read_bundle("inflight.json"))
    print("check C against the bundle:", "ok" if report.ok else "FAILED")
    cli("migrate", "-s", LAPTOP)
    cli("workflow", "import", "inflight.json", "-s", LAPTOP)
    report = await check_upgrade(c, LAPTOP)
    print("check C against the laptop's copy:", "ok" if report.ok else "FAILED")


async def deploy_version_c() -> None:
    """Launch C: it completes every order, each on the branch its history took. (Run on
    virtual time, so the three days of sleep pass at once.)"""
    c, fulfil = build("C")
    async with c.launched():
        for order in ("sleeping", "waiting", "fanning"):
            await c.send(order, "ok", "confirm")
        for order in ("sleeping", "waiting", "fanning"):
            handle = await c.retrieve_workflow(order)
            print("C:", await handle.get_result())
        with SetWorkflowID("new"):
            print("C:", await fulfil("new", 0.0, {"lid": 0.0}), "(a new order: C's branch)")
    steps = [step.function_name for step in await _steps(c, "new")]
    print("C: the new order's first checkpoints:", steps[:3])


async def _steps(dbos: DBOS, workflow_id: str) -> list[Any]:
    async with dbos.launched():
        return list(await dbos.list_workflow_steps(workflow_id))


if __name__ == "__main__":
    for stale in ("production.sqlite", "laptop.sqlite", "inflight.json"):
        if os.path.exists(stale):
            os.remove(stale)
    trio.run(main)
    trio.run(deploy_version_c, clock=trio.testing.MockClock(autojump_threshold=0))
