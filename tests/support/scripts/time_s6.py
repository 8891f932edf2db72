"""S6 figures: send/recv ping-pong and set_event -> get_event latency, notify on and off.

Usage: ``python tests/support/scripts/time_s6.py [ADMIN_URL] [--rounds N]`` (default: the local
trust-auth cluster, 200 round trips). Creates a fresh database, prints one line per
measurement and a JSON summary, drops the database.

* ping-pong: two workflows; the pinger sends to the ponger, which receives and sends
  back; one round trip is send + recv on each side (4 commits). Timed inside the pinger.
* event, same executor: a reader outside any workflow is already waiting in
  ``get_event`` when a workflow's ``set_event`` commits; latency from set_event's
  return to get_event's return (the writer wakes the reader itself).
* event, other executor: the same with the reader in a second executor on the same
  database (its own waiter registry): the LISTEN path with notify on, the 1 s fallback
  re-check with notify off.
"""

from __future__ import annotations

import json
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS), str(TESTS.parent / "src")]

from dbos_trio import DBOS, Config, SetWorkflowID  # noqa: E402
from dbos_trio._sysdb.wakeups import event_key  # noqa: E402

from support.backends import migrate_postgres  # noqa: E402
from support.pg_support import fresh_database  # noqa: E402

WARMUP = 5


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def waiting(executor: Any, key: str) -> bool:
    keys: list[str] = executor.wakeups.keys()
    return key in keys


def app(url: str, notify: bool, executor_id: str, name: str) -> DBOS:
    return DBOS(
        Config(
            app_name=name,
            database_url=url,
            app_version=name,
            executor_id=executor_id,
            use_listen_notify=notify,
        )
    )


async def poll(ready: Callable[[], bool], interval: float) -> None:
    while True:
        if ready():
            return
        await trio.sleep(interval)


async def until_delivering(dbos: DBOS) -> None:
    listener = getattr(dbos._require_executor("s6").sysdb, "listener", None)
    if listener is not None:
        await poll(lambda: bool(listener.delivering), 0.01)


async def pingpong(url: str, notify: bool, rounds: int) -> list[float]:
    dbos = app(url, notify, "pp", f"s6-pp-{uuid.uuid4().hex[:8]}")

    @dbos.workflow(name="ponger")
    async def ponger(n: int, pinger_id: str) -> None:
        for _ in range(n):
            message = await dbos.recv("ping", timeout_seconds=60)
            await dbos.send(pinger_id, message, "pong")

    @dbos.workflow(name="pinger")
    async def pinger(n: int, ponger_id: str) -> list[float]:
        latencies = []
        for i in range(n):
            started = trio.current_time()  # never replayed: a measurement, not state
            await dbos.send(ponger_id, i, "ping")
            if await dbos.recv("pong", timeout_seconds=60) != i:
                raise RuntimeError("out of order")
            latencies.append(trio.current_time() - started)
        return latencies

    async def run(n: int) -> list[float]:
        ponger_id, pinger_id = str(uuid.uuid4()), str(uuid.uuid4())
        with SetWorkflowID(ponger_id):
            pong = await dbos.start_workflow(ponger, n, pinger_id)
        with SetWorkflowID(pinger_id):
            ping = await dbos.start_workflow(pinger, n, ponger_id)
        latencies: list[float] = await ping.get_result()
        await pong.get_result()
        return latencies

    async with dbos.launched():
        await until_delivering(dbos)
        await run(WARMUP)
        return await run(rounds)


async def events(url: str, notify: bool, rounds: int, *, cross: bool) -> list[float]:
    name = f"s6-ev-{uuid.uuid4().hex[:8]}"
    writer = app(url, notify, "writer", name)
    reader = app(url, notify, "reader", name) if cross else writer
    set_at: dict[int, float] = {}

    @writer.workflow(name="setter")
    async def setter(n: int) -> None:
        for i in range(n):
            await writer.recv("go", timeout_seconds=60)
            await writer.set_event(f"k{i}", i)
            set_at[i] = trio.current_time()

    async def run(n: int) -> list[float]:
        set_at.clear()
        handle = await writer.start_workflow(setter, n)
        executor = reader._require_executor("s6")
        latencies = []
        for i in range(n):
            got: list[tuple[Any, float]] = []

            async def read(key: str, got: list[tuple[Any, float]]) -> None:
                value = await reader.get_event(handle.workflow_id, key, timeout_seconds=60)
                got.append((value, trio.current_time()))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read, f"k{i}", got)
                key = event_key(handle.workflow_id, f"k{i}")
                await poll(lambda: waiting(executor, key), 0.001)  # noqa: B023
                await trio.sleep(0.02)  # past its first look: it is waiting
                await writer.send(handle.workflow_id, i, "go")
            value, read_at = got[0]
            if value != i:
                raise RuntimeError(f"event k{i} = {value!r}")
            latencies.append(read_at - set_at[i])
        await handle.get_result()
        return latencies

    async with writer.launched():
        if cross:
            async with reader.launched():
                await until_delivering(writer)
                await until_delivering(reader)
                await run(WARMUP)
                return await run(rounds)
        await until_delivering(writer)
        await run(WARMUP)
        return await run(rounds)


async def main(url: str, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for notify in (True, False):
        mode = "notify" if notify else "poll"
        measured = {
            "pingpong_round_trip": await pingpong(url, notify, rounds),
            "event_same_executor": await events(url, notify, rounds, cross=False),
            "event_other_executor": await events(
                url, notify, rounds if notify else max(20, rounds // 10), cross=True
            ),
        }
        for what, samples in measured.items():
            figures = summary(samples)
            results[f"{what}[{mode}]"] = {"n": len(samples), **figures}
            print(f"{what:24s} {mode:6s} n={len(samples):4d} {figures}", flush=True)
    return results


if __name__ == "__main__":
    args = sys.argv[1:]
    rounds = 200
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at : at + 2]
    if args:
        import os

        os.environ["DBOS_TEST_DATABASE_URL"] = args[0]
    with fresh_database("s6") as url:
        trio.run(migrate_postgres, url)
        print(json.dumps(trio.run(main, url, rounds), indent=2))
