"""S1-S8 on the official ``dbos`` package (3.4), through its asyncio API.

Runs under the virtualenv the runner creates (``benchmarks/.venv-official``), never under ours.
Usage (normally by the runner)::

    python -m benchmarks.driver_official --scenario S1-K10 --params '{"k": 10, "n": 200,
        "warmup": 20}' --database-url postgresql://postgres@127.0.0.1:5432/bench_x

The workload mirrors :mod:`benchmarks.driver_trio` line for line; only the API differs. Every
workflow and step gets an explicit name, so both libraries write the same ``name`` and
``function_name`` values, which the watchers and the S5 kill switch count.

``dbos`` is imported through importlib so that type-checking the harness does not need the
official package installed; its objects are ``Any`` here.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

from benchmarks import common, wire
from benchmarks.common import DriverArgs, Window, ms

LIBRARY = "dbos"
POOL_SIZE = 20  # the official default (sys_db_pool_size), set explicitly to report it
POOL = {"size": POOL_SIZE}  # --param X.pool_size=N sets both libraries' pools

F = TypeVar("F", bound=Callable[..., Coroutine[Any, Any, Any]])
G = TypeVar("G", bound=Callable[..., Any])

dbos_mod: Any = importlib.import_module("dbos")
DBOS: Any = dbos_mod.DBOS
SetWorkflowID: Any = dbos_mod.SetWorkflowID


def workflow(name: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], DBOS.workflow(name=name))


def step(name: str) -> Callable[[G], G]:
    return cast(Callable[[G], G], DBOS.step(name=name))


# ------------------------------------------------------------------ workload (module level:
# the official registry is global and recovery looks functions up by these names)

PHASE = {"value": "run"}
BLOCK_STEP_2 = asyncio.Event()  # never set: in the crash phase, step 2 waits forever
SIDE: dict[str, common.SideWriter] = {}


@step("bench_step")
async def bench_step(i: int) -> int:
    return i + 1


@workflow("s1_workflow")
async def s1_workflow(k: int) -> int:
    total = 0
    for i in range(k):
        total += await bench_step(i)
    return total


@workflow("s3_workflow")
async def s3_workflow(i: int, steps: int) -> int:
    total = i
    for j in range(steps):
        total += await bench_step(j)
    return total


@workflow("s4_workflow")
async def s4_workflow(i: int) -> int:
    return await bench_step(i)


@workflow("s9_workflow")
async def s9_workflow(tasks: int, steps: int, mode: str) -> int:
    totals = [0] * tasks

    async def task(i: int) -> None:
        for j in range(steps):
            totals[i] += await bench_step(i + j)

    await asyncio.gather(*(task(i) for i in range(tasks)))
    return sum(totals)


@step("s5_step1")
async def s5_step1(i: int) -> int:
    # Logs its own execution in a side table (a blocking insert, done in a worker thread), so
    # re-execution is counted without trusting the library.
    await asyncio.to_thread(SIDE["writer"].record, i, 1)
    return i


@step("s5_step2")
async def s5_step2(i: int) -> int:
    if PHASE["value"] == "crash":
        await BLOCK_STEP_2.wait()
    return i


@step("s5_step3")
async def s5_step3(i: int) -> int:
    return i


@workflow("s5_workflow")
async def s5_workflow(i: int) -> int:
    a = await s5_step1(i)
    b = await s5_step2(a)
    return await s5_step3(b)


@workflow("s6_ponger")
async def s6_ponger(n: int, pinger_id: str) -> int:
    for _ in range(n):
        message = await DBOS.recv_async("ping", timeout_seconds=60)
        await DBOS.send_async(pinger_id, message, "pong")
    return n


@workflow("s6_pinger")
async def s6_pinger(n: int, ponger_id: str) -> list[float]:
    # Wall-clock readings inside a workflow are not replay-safe; this one is never replayed.
    latencies = []
    for i in range(n):
        t0 = time.perf_counter()
        await DBOS.send_async(ponger_id, i, "ping")
        reply = await DBOS.recv_async("pong", timeout_seconds=60)
        latencies.append(time.perf_counter() - t0)
        if reply != i:
            raise RuntimeError(f"pong {reply!r} for ping {i}")
    return latencies


@workflow("s6_echo")
async def s6_echo(n: int) -> int:
    for i in range(n):
        message = await DBOS.recv_async("event", timeout_seconds=60)
        await DBOS.set_event_async(f"k{i}", message)
    return n


# S8: one datasource transaction per step, through the official SQLAlchemyDatasource (a def
# workflow) or AsyncSQLAlchemyDatasource (an async def one); created before launch (S8 only).
TX: dict[str, Any] = {}


@workflow("s8_workflow")
async def s8_workflow(k: int) -> int:
    for i in range(k):
        await TX["async"](i)
    return k


@DBOS.workflow(name="s8_workflow_sync")
def s8_workflow_sync(k: int) -> int:
    for i in range(k):
        TX["sync"](i)
    return k


async def create_datasource(app_url: str, api: str) -> None:
    """The official datasource of ``api`` on ``app_url``, and its transaction (before launch)."""
    import sqlalchemy as sa

    update = sa.text(common.S8_UPDATE_SQLALCHEMY)
    if api == "async":
        async_ds = await dbos_mod.AsyncSQLAlchemyDatasource.create(app_url)

        @async_ds.transaction(name="s8_tx")
        async def s8_tx_async(i: int) -> int:
            found = await async_ds.sql_session().execute(update, {"id": i % common.S8_ACCOUNTS})
            return int(found.scalar_one())

        TX["async"] = s8_tx_async
        return
    sync_ds = dbos_mod.SQLAlchemyDatasource.create(app_url)

    @sync_ds.transaction(name="s8_tx")
    def s8_tx(i: int) -> int:
        found = sync_ds.sql_session().execute(update, {"id": i % common.S8_ACCOUNTS})
        return int(found.scalar_one())

    TX["sync"] = s8_tx


async def call_s8(k: int, api: str) -> int:
    if api == "async":
        return cast(int, await s8_workflow(k))
    return cast(int, s8_workflow_sync(k))  # the sync API, called as a sync program would


# ------------------------------------------------------------------ lifecycle


def launch(url: str) -> None:
    config = {
        "name": common.APP_NAME,
        "system_database_url": url,
        "sys_db_pool_size": POOL["size"],
        "application_version": common.APP_VERSION,
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()


def environment(url: str, **extra: Any) -> dict[str, Any]:
    env = common.server_environment(url)
    env.update(pool_size=POOL["size"], listener_connections=1, **extra)
    return env


# ------------------------------------------------------------------ scenarios


async def run_s1(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    for _ in range(warmup):
        await s1_workflow(k)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        result = await s1_workflow(k)
        latencies.append(time.perf_counter() - t0)
        if result != k * (k + 1) // 2:
            raise RuntimeError(f"wrong result {result}")
    window.stop()
    metrics = {
        **common.latency_metrics("latency", latencies),
        "latency_ms_min": ms(min(latencies)),
        "workflows_per_s": round(n / window.wall_s, 2),
    }
    return metrics, window, n


async def run_s2(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    steps = int(args.params["steps"])
    await s1_workflow(int(args.params["warmup_steps"]))
    window = Window().start()
    result = await s1_workflow(steps)
    window.stop()
    if result != steps * (steps + 1) // 2:
        raise RuntimeError(f"wrong result {result}")
    metrics = {"steps_per_s": round(steps / window.wall_s, 2), "elapsed_s": round(window.wall_s, 4)}
    return metrics, window, steps


async def start_many(n: int, steps: int) -> list[Any]:
    starts = (DBOS.start_workflow_async(s3_workflow, i, steps) for i in range(n))
    return list(await asyncio.gather(*starts))


async def run_s3(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, steps, warmup = int(args.params["n"]), int(args.params["steps"]), int(args.params["warmup"])
    for handle in await start_many(warmup, steps):
        await handle.get_result()
    with common.watching(url, "s3_workflow") as watcher:
        watcher.expect(warmup + n)
        window = Window().start()
        handles = await start_many(n, steps)
        started = time.perf_counter()
        done = await asyncio.to_thread(watcher.wait, 600.0)
        window.stop(at=done)
    for i, handle in enumerate(handles):
        result = await handle.get_result()
        if result != i + steps * (steps + 1) // 2:
            raise RuntimeError(f"workflow {i}: wrong result {result}")
    metrics = {
        "workflows_per_s": round(n / window.wall_s, 2),
        "start_phase_s": round(started - window.wall_start, 4),
        "elapsed_s": round(window.wall_s, 4),
        "concurrency": n,
    }
    return metrics, window, n


async def run_s4(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])
    concurrency, poll = int(args.params["worker_concurrency"]), float(args.params["poll_s"])
    queue = await DBOS.register_queue_async(
        "bench_queue", worker_concurrency=concurrency, polling_interval_sec=poll
    )
    for handle in [await queue.enqueue_async(s4_workflow, i) for i in range(warmup)]:
        await handle.get_result()
    with common.watching(url, "s4_workflow") as watcher:
        watcher.expect(warmup + n)
        window = Window().start()
        handles = []
        for i in range(n):
            handles.append(await queue.enqueue_async(s4_workflow, i))
        enqueued = time.perf_counter()
        done = await asyncio.to_thread(watcher.wait, 900.0)
        window.stop(at=done)
    enqueue_s = enqueued - window.wall_start
    metrics = {
        "enqueue_per_s": round(n / enqueue_s, 2),
        "completions_per_s": round(n / window.wall_s, 2),
        "enqueue_phase_s": round(enqueue_s, 4),
        "completion_lag_s": round(window.wall_s - enqueue_s, 4),
        "elapsed_s": round(window.wall_s, 4),
        "worker_concurrency": concurrency,
        "polling_interval_s": poll,
    }
    return metrics, window, n


async def run_s5_phase(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window]:
    """Crash phase: start n workflows that hang in step 2 until the runner's SIGKILL.
    Recover phase: launch (which recovers), wait for n SUCCESS, count step-1 re-executions."""
    n = int(args.params["n"])
    PHASE["value"] = args.phase
    SIDE["writer"] = common.SideWriter(url, args.phase)
    if args.phase == "crash":
        launch(url)
        await asyncio.gather(*(DBOS.start_workflow_async(s5_workflow, i) for i in range(n)))
        await asyncio.Event().wait()  # the runner kills this process
        raise AssertionError("unreachable")
    with common.watching(url, "s5_workflow") as watcher:
        watcher.expect(n)
        window = Window().start()
        launch(url)
        done = await asyncio.to_thread(watcher.wait, 900.0)
        window.stop(at=done)
    return common.s5_metrics(args, url, window, n, done), window


async def run_s6(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])

    async def pingpong(rounds: int, tag: str) -> list[float]:
        ponger_id, pinger_id = f"{tag}-ponger", f"{tag}-pinger"
        with SetWorkflowID(ponger_id):
            ponger = await DBOS.start_workflow_async(s6_ponger, rounds, pinger_id)
        with SetWorkflowID(pinger_id):
            pinger = await DBOS.start_workflow_async(s6_pinger, rounds, ponger_id)
        latencies = cast(list[float], await pinger.get_result())
        await ponger.get_result()
        return latencies

    async def events(rounds: int, tag: str) -> list[float]:
        echo_id = f"{tag}-echo"
        with SetWorkflowID(echo_id):
            echo = await DBOS.start_workflow_async(s6_echo, rounds)
        latencies = []
        for i in range(rounds):
            t0 = time.perf_counter()
            await DBOS.send_async(echo_id, i, "event")
            value = await DBOS.get_event_async(echo_id, f"k{i}", timeout_seconds=60)
            latencies.append(time.perf_counter() - t0)
            if value != i:
                raise RuntimeError(f"event k{i} = {value!r}")
        await echo.get_result()
        return latencies

    await pingpong(warmup, "warm")
    await events(warmup, "warm")
    window = Window().start()
    ping = await pingpong(n, "timed")
    window.stop()
    event = await events(n, "timed")
    metrics = {
        **common.latency_metrics("pingpong_rt", ping),
        **common.latency_metrics("event_rt", event),
    }
    return metrics, window, n


async def run_s8(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    api = str(args.params.get("official_api", "sync"))
    for _ in range(warmup):
        await call_s8(k, api)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        if await call_s8(k, api) != k:
            raise RuntimeError("wrong result")
        latencies.append(time.perf_counter() - t0)
    window.stop()
    common.s8_check(url, (warmup + n) * k)
    metrics = {
        **common.latency_metrics("latency", latencies),
        "per_transaction_ms_median": round(common.median(latencies) * 1000 / k, 3),
        "workflows_per_s": round(n / window.wall_s, 2),
        "official_api": api,
    }
    return metrics, window, n


async def run_s8_wire(
    args: DriverArgs, url: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    api = str(args.params.get("official_api", "sync"))
    host, port = common.host_port(url)
    with wire.WireCounter(host, port) as sys_proxy, wire.WireCounter(host, port) as app_proxy:
        await create_datasource(common.with_port(url, "127.0.0.1", app_proxy.port), api)
        launch(common.with_port(url, "127.0.0.1", sys_proxy.port))
        try:
            for _ in range(warmup):
                await call_s8(k, api)
            idle_s = float(args.params["idle_s"])
            before_idle = sys_proxy.snapshot()
            await asyncio.sleep(idle_s)
            sys_before, app_before = sys_proxy.snapshot(), app_proxy.snapshot()
            window = Window().start()
            for _ in range(n):
                await call_s8(k, api)
            window.stop()
            sys_after, app_after = sys_proxy.snapshot(), app_proxy.snapshot()
        finally:
            DBOS.destroy()
        for proxy in (sys_proxy, app_proxy):
            if proxy.error is not None:
                raise RuntimeError(f"wire proxy failed: {proxy.error!r}")
    common.s8_check(url, (warmup + n) * k)
    metrics = wire.transaction_metrics(
        app_after.minus(app_before),
        sys_after.minus(sys_before),
        sys_before.minus(before_idle),
        idle_s,
        window.wall_s,
        k,
        n,
    )
    metrics["official_api"] = api
    return metrics, common.cpu_record(window, n, "workflow"), environment(url, concurrency=1)


async def run_s9(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])
    tasks, steps = int(args.params["tasks"]), int(args.params["steps_per_task"])
    mode = str(args.params["mode"])
    want = common.s9_expected(tasks, steps)
    for _ in range(warmup):
        await s9_workflow(tasks, steps, mode)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        if await s9_workflow(tasks, steps, mode) != want:
            raise RuntimeError("wrong result")
        latencies.append(time.perf_counter() - t0)
    window.stop()
    return {**common.latency_metrics("latency", latencies), "mode": mode}, window, n


RUNNERS = {
    "S1": run_s1,
    "S9": run_s9,
    "S2": run_s2,
    "S3": run_s3,
    "S4": run_s4,
    "S6": run_s6,
    "S8": run_s8,
}


async def scenario(args: DriverArgs) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    url = args.database_url
    group = args.scenario.split("-")[0]
    POOL["size"] = int(args.params.get("pool_size", POOL_SIZE))
    if group == "S5":
        n = int(args.params["n"])
        metrics, window = await run_s5_phase(args, url)
        return metrics, common.cpu_record(window, n, "workflow"), environment(url, concurrency=n)
    if group == "S7":
        return await run_s7_counting(args, url)
    if args.scenario == "S8-WIRE":
        common.s8_setup(url)
        return await run_s8_wire(args, url)
    if group == "S8":
        common.s8_setup(url)
        await create_datasource(url, str(args.params.get("official_api", "sync")))
    launch(url)
    try:
        metrics, window, units = await RUNNERS[group](args, url)
    finally:
        DBOS.destroy()
    unit = {"S2": "step", "S6": "round trip"}.get(group, "workflow")
    concurrency = {"S3": args.params.get("n"), "S4": args.params.get("worker_concurrency")}
    env = environment(url, concurrency=concurrency.get(group, 1))
    return metrics, common.cpu_record(window, units, unit), env


async def run_s7_counting(
    args: DriverArgs, url: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    host, port = common.host_port(url)
    with wire.WireCounter(host, port) as proxy:
        launch(common.with_port(url, "127.0.0.1", proxy.port))
        try:
            for _ in range(warmup):
                await s1_workflow(k)
            idle_s = float(args.params["idle_s"])
            before_idle = proxy.snapshot()
            await asyncio.sleep(idle_s)
            before = proxy.snapshot()
            window = Window().start()
            for _ in range(n):
                await s1_workflow(k)
            window.stop()
            after = proxy.snapshot()
        finally:
            DBOS.destroy()
        if proxy.error is not None:
            raise RuntimeError(f"wire proxy failed: {proxy.error!r}")
    metrics = wire.per_unit(after.minus(before), n)
    metrics.update(wire.rates(before.minus(before_idle), idle_s))
    metrics.update(wire.net_of_background(metrics, window.wall_s, n))
    metrics["per_step_commits"] = round(metrics["commits_per_wf"] / k, 3)
    metrics["per_step_round_trips"] = round(metrics["round_trips_per_wf"] / k, 3)
    return metrics, common.cpu_record(window, n, "workflow"), environment(url, concurrency=1)


def body(args: DriverArgs) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return asyncio.run(scenario(args))


def main() -> int:
    return common.run_driver(LIBRARY, importlib.metadata.version("dbos"), body)


if __name__ == "__main__":
    raise SystemExit(main())
