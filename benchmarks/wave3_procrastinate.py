"""procrastinate 3.10 on issue 34's bulk and drain scenarios, run by :mod:`benchmarks.wave3` in
procrastinate's own virtualenv (``~/.cache/dbos_trio/bench-procrastinate``:
``pip install "procrastinate>=3,<4" "psycopg[binary]"``; dbos_trio is not importable there).

``python wave3_procrastinate.py SCENARIO URL JOBS`` prints one JSON line. procrastinate's
documented fast path: a ``PsycopgConnector`` (psycopg 3, its async pool), an ``async``
task, ``batch_defer_async`` for a batch (one multi-row insert), and ``run_worker_async``
with ``concurrency=16`` (the dbos_trio worker's concurrency), ``listen_notify`` on (the
default), ``wait=False`` so that the worker returns once the queue is empty; jobs are kept
(``delete_jobs="never"``, the default).

* ``bulk``: ``JOBS`` jobs in one ``batch_defer_async`` call.
* ``drain``: ``JOBS`` jobs deferred in bulk, then a worker started; the clock runs from its
  start until it returns with the queue empty (every job's status then ``succeeded``,
  checked).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time

import procrastinate

logging.getLogger("procrastinate").setLevel(logging.WARNING)


def make_app(url: str) -> tuple[procrastinate.App, procrastinate.tasks.Task]:  # type: ignore[type-arg]
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="w3", queue="w3")
    async def w3(i: int) -> int:
        return i

    return app, w3


async def bulk(url: str, jobs: int) -> dict[str, object]:
    app, task = make_app(url)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        await task.batch_defer_async(*({"i": -1} for _ in range(10)))  # warm-up
        begin = time.perf_counter()
        await task.batch_defer_async(*({"i": i} for i in range(jobs)))
        elapsed = time.perf_counter() - begin
    return {
        "scenario": "bulk",
        "library": "procrastinate",
        "api": "batch_defer_async",
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
    }


async def drain(url: str, jobs: int) -> dict[str, object]:
    app, task = make_app(url)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        await task.batch_defer_async(*({"i": i} for i in range(jobs)))
    app, task = make_app(url)
    async with app.open_async():
        begin = time.perf_counter()
        cpu = time.process_time()
        await asyncio.wait_for(
            app.run_worker_async(
                queues=["w3"], concurrency=16, wait=False, install_signal_handlers=False
            ),
            timeout=120,
        )
        elapsed = time.perf_counter() - begin
        cpu = time.process_time() - cpu
        async with app.connector.pool.connection() as conn:  # type: ignore[attr-defined]
            cur = await conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
            )
            row = await cur.fetchone()
    if row is None or row[0] != jobs:
        raise RuntimeError(f"procrastinate's worker returned with {row} of {jobs} succeeded")
    return {
        "scenario": "drain",
        "library": "procrastinate",
        "concurrency": 16,
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
        "cpu_ms_per_job": round(1000 * cpu / jobs, 3),
    }


async def main() -> None:
    scenario, url, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    record = await (bulk(url, jobs) if scenario == "bulk" else drain(url, jobs))
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
