"""How long ``dbos-trio check`` takes for many recorded workflows (issue 33).

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.check_upgrade                      # 1,000 workflows on SQLite
    python -m benchmarks.check_upgrade --workflows 1000 --backend postgres

Records ``--workflows`` runs of a workflow of five durable calls (three steps, an event, a
durable sleep of a day) with a launched application — half finished, half left PENDING
mid-sleep (the launch ends while they sleep) — then times ``check_upgrade`` over all of
them: reading the histories (one listing plus one read of the checkpoints per workflow)
and replaying each in its own ``trio.run`` under a ``MockClock`` (the day of sleep is
virtual). Prints one JSON line: the counts by verdict, the seconds taken, per workflow.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import trio

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio.testing import check_upgrade, sqlite_url, temporary_postgres_url


def build(url: str) -> tuple[DBOS, object]:
    dbos = DBOS(Config(app_name="check-bench", database_url=url, app_version="v1"))

    @dbos.step(name="reserve")
    async def reserve(x: int) -> int:
        return x + 1

    @dbos.step(name="charge")
    async def charge(x: int) -> int:
        return x * 2

    @dbos.step(name="ship")
    async def ship(x: int) -> str:
        return f"shipped-{x}"

    @dbos.workflow(name="order")
    async def order(x: int, wait: bool) -> str:
        await reserve(x)
        await charge(x)
        await dbos.set_event("charged", True)
        if wait:
            await dbos.sleep(86400)
        return await ship(x)

    return dbos, order


async def record(url: str, count: int) -> None:
    dbos, order = build(url)
    async with dbos.launched():
        async with trio.open_nursery() as nursery:
            for i in range(count):
                with SetWorkflowID(f"order-{i}"):
                    handle = await dbos.start_workflow(order, i, i % 2 == 1)  # type: ignore[arg-type]
                if i % 2 == 0:
                    nursery.start_soon(handle.get_result)
        for i in range(1, count, 2):  # the sleepers: wait until each has its event
            await dbos.get_event(f"order-{i}", "charged", timeout_seconds=60)


async def measure(url: str, count: int) -> dict[str, object]:
    await record(url, count)
    dbos, _ = build(url)
    started = time.perf_counter()
    report = await check_upgrade(dbos, url, finished=count)
    seconds = time.perf_counter() - started
    return {
        "workflows": len(report.results),
        "counts": report.counts(),
        "ok": report.ok,
        "seconds_total": round(seconds, 3),
        "seconds_replaying": round(report.seconds, 3),
        "ms_per_workflow": round(1000 * seconds / max(1, len(report.results)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workflows", type=int, default=1000)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    if args.backend == "sqlite":
        with tempfile.TemporaryDirectory() as where:
            url = sqlite_url(Path(where) / "bench.sqlite")
            result = trio.run(measure, url, args.workflows)
    else:
        with temporary_postgres_url(args.server) as url:
            result = trio.run(measure, url, args.workflows)
    print(json.dumps({"backend": args.backend, **result}))


if __name__ == "__main__":
    main()
