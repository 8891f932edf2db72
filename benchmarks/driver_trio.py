"""S1-S8 on dbos_trio, through its public API (shared/docs/API.md) only.

Runs under whatever interpreter has dbos_trio installed (the runner passes its own
``sys.executable`` by default). Usage (normally by the runner)::

    python -m benchmarks.driver_trio --scenario S1-K10 --params '{"k": 10, "n": 200,
        "warmup": 20}' --database-url postgresql://postgres@127.0.0.1:5432/bench_x

The workload mirrors :mod:`benchmarks.driver_official` line for line; only the API differs.
Every workflow and step is registered with an explicit name, the same as on the official side.

The package is imported inside the run (through importlib), so a dbos_trio that is not there
yet, or lacks a name, still yields a proper ``ok: false`` record instead of a crash.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import time
from collections.abc import Callable, Coroutine
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import trio

from benchmarks import common, wire
from benchmarks.common import DriverArgs, Window, ms

LIBRARY = "dbos_trio"

F = TypeVar("F", bound=Callable[..., Coroutine[Any, Any, Any]])
G = TypeVar("G", bound=Callable[..., Any])


def version() -> str:
    try:
        return importlib.metadata.version("dbos-trio")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _dropping_tracer_provider() -> Any:
    """An OpenTelemetry SDK provider whose spans are batched and dropped: what a real
    pipeline costs the process, minus the exporter's network I/O."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    return provider


class Bench:
    """One DBOS instance with the benchmark workload registered on it."""

    def __init__(
        self, url: str, params: dict[str, Any], phase: str = "run", app_url: str | None = None
    ) -> None:
        self.api: Any = importlib.import_module("dbos_trio")
        # --param X.pool_size=N sets both libraries' pools; otherwise each keeps its default.
        pool = {"max_connections": int(params["pool_size"])} if "pool_size" in params else {}
        # S9-PLAIN: tasks of a plain Trio nursery take ids as they come, as upstream's do.
        if params.get("mode") == "plain":
            pool["unordered_tasks"] = "warn"
        # --param X.otel=1 / X.metrics=1: the observability cost (docs/observability.md).
        if int(params.get("otel", 0)):
            pool.update(enable_otel=True, otel_tracer_provider=_dropping_tracer_provider())
        if int(params.get("metrics", 0)):
            pool["enable_metrics"] = True
        # R1's enqueue alone (benchmarks/replay.py): serve none of the benchmark's queues.
        if "listen_queues" in params:
            pool["listen_queues"] = list(params["listen_queues"])
        self.config: Any = self.api.Config(
            app_name=common.APP_NAME, database_url=url, app_version=common.APP_VERSION, **pool
        )
        self.dbos: Any = self.api.DBOS(self.config)
        self.phase = phase
        self.side: common.SideWriter | None = None
        self.queue: Any = None
        self.proxy: wire.WireCounter | None = None
        self.proxies: tuple[wire.WireCounter, wire.WireCounter] | tuple[()] = ()
        self.fn = self._register()
        if app_url is not None:  # S8: a datasource on the application database
            self._register_transactions(app_url)

    def workflow(self, name: str) -> Callable[[F], F]:
        return cast(Callable[[F], F], self.dbos.workflow(name=name))

    def step(self, name: str) -> Callable[[G], G]:
        return cast(Callable[[G], G], self.dbos.step(name=name))

    def _register(self) -> SimpleNamespace:
        dbos = self.dbos

        @self.step("bench_step")
        async def bench_step(i: int) -> int:
            return i + 1

        @self.workflow("s1_workflow")
        async def s1_workflow(k: int) -> int:
            total = 0
            for i in range(k):
                total += await bench_step(i)
            return total

        @self.workflow("s3_workflow")
        async def s3_workflow(i: int, steps: int) -> int:
            total = i
            for j in range(steps):
                total += await bench_step(j)
            return total

        @self.workflow("s4_workflow")
        async def s4_workflow(i: int) -> int:
            return await bench_step(i)

        @self.workflow("s9_workflow")
        async def s9_workflow(tasks: int, steps: int, mode: str) -> int:
            totals = [0] * tasks

            async def task(i: int) -> None:
                for j in range(steps):
                    totals[i] += await bench_step(i + j)

            opened = dbos.open_nursery() if mode == "nursery" else trio.open_nursery()
            async with opened as nursery:
                for i in range(tasks):
                    nursery.start_soon(task, i)
            return sum(totals)

        @self.step("s5_step1")
        async def s5_step1(i: int) -> int:
            # Logs its own execution in a side table (a blocking insert, done in a worker
            # thread), so re-execution is counted without trusting the library.
            assert self.side is not None
            await trio.to_thread.run_sync(self.side.record, i, 1)
            return i

        @self.step("s5_step2")
        async def s5_step2(i: int) -> int:
            if self.phase == "crash":
                await trio.sleep_forever()
            return i

        @self.step("s5_step3")
        async def s5_step3(i: int) -> int:
            return i

        @self.workflow("s5_workflow")
        async def s5_workflow(i: int) -> int:
            a = await s5_step1(i)
            b = await s5_step2(a)
            return await s5_step3(b)

        @self.workflow("s6_ponger")
        async def s6_ponger(n: int, pinger_id: str) -> int:
            for _ in range(n):
                message = await dbos.recv("ping", timeout_seconds=60)
                await dbos.send(pinger_id, message, "pong")
            return n

        @self.workflow("s6_pinger")
        async def s6_pinger(n: int, ponger_id: str) -> list[float]:
            # Wall-clock readings in a workflow are not replay-safe; this one never replays.
            latencies = []
            for i in range(n):
                t0 = time.perf_counter()
                await dbos.send(ponger_id, i, "ping")
                reply = await dbos.recv("pong", timeout_seconds=60)
                latencies.append(time.perf_counter() - t0)
                if reply != i:
                    raise RuntimeError(f"pong {reply!r} for ping {i}")
            return latencies

        @self.workflow("s6_echo")
        async def s6_echo(n: int) -> int:
            for i in range(n):
                message = await dbos.recv("event", timeout_seconds=60)
                await dbos.set_event(f"k{i}", message)
            return n

        return SimpleNamespace(**{k: v for k, v in locals().items() if k.startswith("s")})

    def _register_transactions(self, app_url: str) -> None:
        ds = self.dbos.postgres_datasource(app_url)  # SERIALIZABLE, as the official default

        @ds.transaction(name="s8_tx")
        async def s8_tx(conn: Any, i: int) -> int:
            balance = await conn.fetch_value(common.S8_UPDATE_TRIO, {"id": i % common.S8_ACCOUNTS})
            return int(balance)

        @self.workflow("s8_workflow")
        async def s8_workflow(k: int) -> int:
            for i in range(k):
                await s8_tx(i)
            return k

        self.fn.s8_workflow = s8_workflow

    def environment(self, url: str, **extra: Any) -> dict[str, Any]:
        env = common.server_environment(url)
        env.update(
            pool_size=getattr(self.config, "max_connections", None),
            listener_connections=1 if getattr(self.config, "use_listen_notify", True) else 0,
            **extra,
        )
        return env


# ------------------------------------------------------------------ scenarios


async def run_s1(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    for _ in range(warmup):
        await b.fn.s1_workflow(k)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        result = await b.fn.s1_workflow(k)
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


async def run_s2(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    steps = int(args.params["steps"])
    await b.fn.s1_workflow(int(args.params["warmup_steps"]))
    window = Window().start()
    result = await b.fn.s1_workflow(steps)
    window.stop()
    if result != steps * (steps + 1) // 2:
        raise RuntimeError(f"wrong result {result}")
    metrics = {"steps_per_s": round(steps / window.wall_s, 2), "elapsed_s": round(window.wall_s, 4)}
    return metrics, window, steps


async def start_many(b: Bench, fn: Any, n: int, *args: Any) -> list[Any]:
    """Start n workflows concurrently, one task each in a nursery; their handles in order."""
    handles: list[Any] = [None] * n

    async def start_one(i: int) -> None:
        handles[i] = await b.dbos.start_workflow(fn, i, *args)

    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(start_one, i)
    return handles


async def run_s3(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, steps, warmup = int(args.params["n"]), int(args.params["steps"]), int(args.params["warmup"])
    for handle in await start_many(b, b.fn.s3_workflow, warmup, steps):
        await handle.get_result()
    with common.watching(url, "s3_workflow") as watcher:
        watcher.expect(warmup + n)
        window = Window().start()
        handles = await start_many(b, b.fn.s3_workflow, n, steps)
        started = time.perf_counter()
        done = await trio.to_thread.run_sync(watcher.wait, 600.0)
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


async def run_s4(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])
    concurrency, poll = int(args.params["worker_concurrency"]), float(args.params["poll_s"])
    queue = b.queue
    for handle in [await queue.enqueue(b.fn.s4_workflow, i) for i in range(warmup)]:
        await handle.get_result()
    with common.watching(url, "s4_workflow") as watcher:
        watcher.expect(warmup + n)
        window = Window().start()
        for i in range(n):
            await queue.enqueue(b.fn.s4_workflow, i)
        enqueued = time.perf_counter()
        done = await trio.to_thread.run_sync(watcher.wait, 900.0)
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


async def run_s6(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])
    dbos, set_id = b.dbos, b.api.SetWorkflowID

    async def pingpong(rounds: int, tag: str) -> list[float]:
        ponger_id, pinger_id = f"{tag}-ponger", f"{tag}-pinger"
        with set_id(ponger_id):
            ponger = await dbos.start_workflow(b.fn.s6_ponger, rounds, pinger_id)
        with set_id(pinger_id):
            pinger = await dbos.start_workflow(b.fn.s6_pinger, rounds, ponger_id)
        latencies = cast(list[float], await pinger.get_result())
        await ponger.get_result()
        return latencies

    async def events(rounds: int, tag: str) -> list[float]:
        echo_id = f"{tag}-echo"
        with set_id(echo_id):
            echo = await dbos.start_workflow(b.fn.s6_echo, rounds)
        latencies = []
        for i in range(rounds):
            t0 = time.perf_counter()
            await dbos.send(echo_id, i, "event")
            value = await dbos.get_event(echo_id, f"k{i}", timeout_seconds=60)
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


async def run_s5_phase(args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, Bench]:
    """Crash phase: start n workflows that hang in step 2 until the runner's SIGKILL.
    Recover phase: launch (which recovers), wait for n SUCCESS, count step-1 re-executions."""
    n = int(args.params["n"])
    b = Bench(url, args.params, phase=args.phase)
    b.side = common.SideWriter(url, args.phase)
    if args.phase == "crash":
        async with b.dbos.launched():
            await start_many(b, b.fn.s5_workflow, n)
            await trio.sleep_forever()  # the runner kills this process
    with common.watching(url, "s5_workflow") as watcher:
        watcher.expect(n)
        window = Window().start()
        async with b.dbos.launched():
            done = await trio.to_thread.run_sync(watcher.wait, 900.0)
            window.stop(at=done)
    return common.s5_metrics(args, url, window, n, done), window, b


async def run_s7(b: Bench, args: DriverArgs) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    proxy = b.proxy
    assert proxy is not None
    async with b.dbos.launched():
        for _ in range(warmup):
            await b.fn.s1_workflow(k)
        idle_s = float(args.params["idle_s"])
        before_idle = proxy.snapshot()
        await trio.sleep(idle_s)
        before = proxy.snapshot()
        window = Window().start()
        for _ in range(n):
            await b.fn.s1_workflow(k)
        window.stop()
        after = proxy.snapshot()
    if proxy.error is not None:
        raise RuntimeError(f"wire proxy failed: {proxy.error!r}")
    metrics = wire.per_unit(after.minus(before), n)
    metrics.update(wire.rates(before.minus(before_idle), idle_s))
    metrics.update(wire.net_of_background(metrics, window.wall_s, n))
    metrics["per_step_commits"] = round(metrics["commits_per_wf"] / k, 3)
    metrics["per_step_round_trips"] = round(metrics["round_trips_per_wf"] / k, 3)
    return metrics, window, n


async def run_s8(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    for _ in range(warmup):
        await b.fn.s8_workflow(k)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        if await b.fn.s8_workflow(k) != k:
            raise RuntimeError("wrong result")
        latencies.append(time.perf_counter() - t0)
    window.stop()
    common.s8_check(url, (warmup + n) * k)
    metrics = {
        **common.latency_metrics("latency", latencies),
        "per_transaction_ms_median": round(common.median(latencies) * 1000 / k, 3),
        "workflows_per_s": round(n / window.wall_s, 2),
    }
    return metrics, window, n


async def run_s8_wire(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    k, n, warmup = int(args.params["k"]), int(args.params["n"]), int(args.params["warmup"])
    sys_proxy, app_proxy = b.proxies
    async with b.dbos.launched():
        for _ in range(warmup):
            await b.fn.s8_workflow(k)
        idle_s = float(args.params["idle_s"])
        before_idle = sys_proxy.snapshot()
        await trio.sleep(idle_s)
        sys_before, app_before = sys_proxy.snapshot(), app_proxy.snapshot()
        window = Window().start()
        for _ in range(n):
            await b.fn.s8_workflow(k)
        window.stop()
        sys_after, app_after = sys_proxy.snapshot(), app_proxy.snapshot()
    for proxy in b.proxies:
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
    return metrics, window, n


async def run_s9(b: Bench, args: DriverArgs, url: str) -> tuple[dict[str, Any], Window, int]:
    n, warmup = int(args.params["n"]), int(args.params["warmup"])
    tasks, steps = int(args.params["tasks"]), int(args.params["steps_per_task"])
    mode = str(args.params["mode"])
    want = common.s9_expected(tasks, steps)
    for _ in range(warmup):
        await b.fn.s9_workflow(tasks, steps, mode)
    latencies = []
    window = Window().start()
    for _ in range(n):
        t0 = time.perf_counter()
        if await b.fn.s9_workflow(tasks, steps, mode) != want:
            raise RuntimeError("wrong result")
        latencies.append(time.perf_counter() - t0)
    window.stop()
    metrics = {**common.latency_metrics("latency", latencies), "mode": mode}
    return metrics, window, n


RUNNERS = {
    "S1": run_s1,
    "S2": run_s2,
    "S3": run_s3,
    "S4": run_s4,
    "S6": run_s6,
    "S8": run_s8,
    "S9": run_s9,
}


async def scenario(args: DriverArgs) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    url = args.database_url
    group = args.scenario.split("-")[0]
    if group == "S5":
        n = int(args.params["n"])
        metrics, window, b = await run_s5_phase(args, url)
        return metrics, common.cpu_record(window, n, "workflow"), b.environment(url, concurrency=n)
    if group == "S7":
        host, port = common.host_port(url)
        with wire.WireCounter(host, port) as proxy:
            b = Bench(common.with_port(url, "127.0.0.1", proxy.port), args.params)
            b.proxy = proxy
            metrics, window, units = await run_s7(b, args)
        env = b.environment(url, concurrency=1)
        return metrics, common.cpu_record(window, units, "workflow"), env
    if args.scenario == "S8-WIRE":
        common.s8_setup(url)
        host, port = common.host_port(url)
        with wire.WireCounter(host, port) as sys_proxy, wire.WireCounter(host, port) as app_proxy:
            b = Bench(
                common.with_port(url, "127.0.0.1", sys_proxy.port),
                args.params,
                app_url=common.with_port(url, "127.0.0.1", app_proxy.port),
            )
            b.proxies = (sys_proxy, app_proxy)
            metrics, window, units = await run_s8_wire(b, args, url)
        return (
            metrics,
            common.cpu_record(window, units, "workflow"),
            b.environment(url, concurrency=1),
        )
    if group == "S8":
        common.s8_setup(url)
    b = Bench(url, args.params, app_url=url if group == "S8" else None)
    if group == "S4":
        b.queue = b.dbos.register_queue(
            "bench_queue",
            worker_concurrency=int(args.params["worker_concurrency"]),
            polling_interval_sec=float(args.params["poll_s"]),
        )
    async with b.dbos.launched():
        metrics, window, units = await RUNNERS[group](b, args, url)
    unit = {"S2": "step", "S6": "round trip"}.get(group, "workflow")
    concurrency = {"S3": args.params.get("n"), "S4": args.params.get("worker_concurrency")}
    env = b.environment(url, concurrency=concurrency.get(group, 1))
    return metrics, common.cpu_record(window, units, unit), env


def body(args: DriverArgs) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return trio.run(scenario, args)


def main() -> int:
    return common.run_driver(LIBRARY, version(), body)


if __name__ == "__main__":
    raise SystemExit(main())
