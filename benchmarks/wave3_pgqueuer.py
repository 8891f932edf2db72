"""pgqueuer 1.6 on issue 34's scenarios, run by :mod:`benchmarks.wave3` in pgqueuer's own
virtualenv (standard library, asyncpg and pgqueuer only; dbos_trio is not importable there).

``python wave3_pgqueuer.py SCENARIO URL JOBS`` prints one JSON line. pgqueuer's documented
fast path and recommended settings: enqueue by ``Queries.enqueue`` (lists for a batch: one
multi-row INSERT), a ``QueueManager`` worker woken by its trigger's NOTIFY, ``batch_size``
10 (the default; 8 in the drain, as pgqueuer wants ``max_concurrent_tasks`` at least twice
it), ``max_concurrent_tasks`` 16 for the drain (the dbos_trio worker's concurrency), one
asyncpg connection each for the worker and the producer.

* ``pickup``: this process works; a producer subprocess enqueues one job at a time at 20/s
  for 10 s; latency is from the producer's enqueue returning to the job's entrypoint starting.
* ``bulk``: ``JOBS`` jobs in one ``enqueue`` call of lists.
* ``drain``: ``JOBS`` jobs enqueued in bulk, then a worker started; the clock runs from its
  start until every job has run.
* ``sustained``: this process works; a producer process of 16 tasks (an asyncpg pool of
  16) each enqueues one job at a time, as fast as answered, for ``JOBS`` seconds.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from datetime import timedelta

import asyncpg
from pgqueuer import AsyncpgDriver, QueueManager
from pgqueuer.models import Job
from pgqueuer.queries import Queries

PRODUCER = r"""
import asyncio, json, sys, time, asyncpg
from pgqueuer import AsyncpgDriver
from pgqueuer.queries import Queries
async def main():
    conn = await asyncpg.connect(sys.argv[1])
    q = Queries(AsyncpgDriver(conn))
    for _ in range(3):
        await q.enqueue("w3", b"-1")
    await asyncio.sleep(1.0)
    sent = {}
    begin = time.monotonic()
    for i in range(200):
        delay = begin + i / 20 - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        ids = await q.enqueue("w3", str(i).encode())
        sent[str(ids[0])] = time.time()
    print(json.dumps(sent))
asyncio.run(main())
"""


SUSTAINED_PRODUCER = r"""
import asyncio, json, sys, time, asyncpg
from pgqueuer import AsyncpgPoolDriver
from pgqueuer.queries import Queries
async def main():
    url, tasks, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    pool = await asyncpg.create_pool(url, min_size=tasks, max_size=tasks)
    q = Queries(AsyncpgPoolDriver(pool))
    await q.enqueue("w3", b"-1")
    sent = {}
    deadline = time.monotonic() + seconds
    async def loop():
        while time.monotonic() < deadline:
            ids = await q.enqueue("w3", b"0")
            sent[str(ids[0])] = time.time()
    await asyncio.gather(*(loop() for _ in range(tasks)))
    await pool.close()
    print(json.dumps(sent))
asyncio.run(main())
"""


async def install(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await Queries(AsyncpgDriver(conn)).install()
    finally:
        await conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def pickup(url: str) -> dict[str, object]:
    started: dict[str, float] = {}
    conn = await asyncpg.connect(url)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    @qm.entrypoint("w3")
    async def w3(job: Job) -> None:
        started[str(job.id)] = time.time()

    worker = asyncio.create_task(qm.run())
    await asyncio.sleep(0.5)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PRODUCER, url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    sent: dict[str, float] = json.loads(out)
    deadline = time.monotonic() + 30
    while not all(job_id in started for job_id in sent) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    qm.shutdown.set()
    await worker
    await conn.close()
    latencies = [1000 * (started[job_id] - at) for job_id, at in sent.items()]
    return {
        "scenario": "pickup",
        "library": "pgqueuer",
        "jobs": len(latencies),
        "median_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
    }


async def bulk(url: str, jobs: int) -> dict[str, object]:
    conn = await asyncpg.connect(url)
    q = Queries(AsyncpgDriver(conn))
    await q.enqueue(["w3"] * 10, [b"-1"] * 10, [0] * 10)  # warm-up
    begin = time.perf_counter()
    await q.enqueue(["w3"] * jobs, [str(i).encode() for i in range(jobs)], [0] * jobs)
    elapsed = time.perf_counter() - begin
    await conn.close()
    return {
        "scenario": "bulk",
        "library": "pgqueuer",
        "api": "enqueue(lists)",
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
    }


async def drain(url: str, jobs: int) -> dict[str, object]:
    conn = await asyncpg.connect(url)
    q = Queries(AsyncpgDriver(conn))
    await q.enqueue(["w3"] * jobs, [str(i).encode() for i in range(jobs)], [0] * jobs)
    await conn.close()
    conn = await asyncpg.connect(url)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    done = 0

    @qm.entrypoint("w3")
    async def w3(job: Job) -> None:
        nonlocal done
        done += 1
        if done >= jobs:
            qm.shutdown.set()

    begin = time.perf_counter()
    cpu = time.process_time()
    await asyncio.wait_for(
        qm.run(batch_size=8, max_concurrent_tasks=16, dequeue_timeout=timedelta(seconds=1)),
        timeout=120,
    )
    elapsed = time.perf_counter() - begin
    cpu = time.process_time() - cpu
    await conn.close()
    return {
        "scenario": "drain",
        "library": "pgqueuer",
        "concurrency": 16,
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
        "cpu_ms_per_job": round(1000 * cpu / jobs, 3),
    }


async def sustained(url: str, seconds: float) -> dict[str, object]:
    """A worker here (the drain's settings) and a producer process of 16 tasks each
    enqueueing one job at a time for ``seconds``: completions/s from 2 s in to the
    producer's end, and enqueue-to-start latency."""
    started: dict[str, float] = {}
    conn = await asyncpg.connect(url)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    @qm.entrypoint("w3")
    async def w3(job: Job) -> None:
        started[str(job.id)] = time.time()

    worker = asyncio.create_task(
        qm.run(batch_size=8, max_concurrent_tasks=16, dequeue_timeout=timedelta(seconds=1))
    )
    await asyncio.sleep(0.5)
    begin = time.time()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SUSTAINED_PRODUCER,
        url,
        "16",
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    sent: dict[str, float] = json.loads(out)
    deadline = time.monotonic() + 30
    while not all(job_id in started for job_id in sent) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    qm.shutdown.set()
    await worker
    await conn.close()
    return sustained_record("pgqueuer", sent, started, begin, seconds)


def sustained_record(
    library: str, sent: dict[str, float], started: dict[str, float], begin: float, seconds: float
) -> dict[str, object]:
    """Completions/s between 2 s after the producer started and its end; latency of
    every job from its enqueue returning to its start."""
    window_start, window_end = begin + 2, begin + seconds
    done = [at for job, at in started.items() if job in sent and window_start <= at < window_end]
    latencies = [1000 * (started[job] - at) for job, at in sent.items() if job in started]
    return {
        "scenario": "sustained",
        "library": library,
        "enqueued": len(sent),
        "completed_per_s": round(len(done) / (window_end - window_start)),
        "enqueued_per_s": round(len(sent) / seconds),
        "median_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
    }


async def fill(url: str, jobs: int) -> dict[str, object]:
    conn = await asyncpg.connect(url)
    q = Queries(AsyncpgDriver(conn))
    await q.enqueue(["w3"] * jobs, [str(i).encode() for i in range(jobs)], [0] * jobs)
    await conn.close()
    return {"scenario": "fill", "jobs": jobs}


async def worker() -> dict[str, object]:
    """One of several worker processes (benchmarks/wave3_scaleout.py): same settings as the
    drain's; launched on a line on stdin, stopped on the next one."""
    url = sys.argv[2]
    conn = await asyncpg.connect(url)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))
    done = 0

    @qm.entrypoint("w3")
    async def w3(job: Job) -> None:
        nonlocal done
        done += 1

    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    cpu = time.process_time()
    task = asyncio.create_task(
        qm.run(batch_size=8, max_concurrent_tasks=16, dequeue_timeout=timedelta(seconds=1))
    )
    print("launched", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    qm.shutdown.set()
    await task
    cpu = time.process_time() - cpu
    await conn.close()
    return {"cpu_s": cpu, "started": done}


async def main() -> None:
    scenario, url, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if scenario == "worker":
        print(json.dumps(await worker()), flush=True)
        return
    await install(url)
    if scenario == "fill":
        record = await fill(url, jobs)
    elif scenario == "pickup":
        record = await pickup(url)
    elif scenario == "bulk":
        record = await bulk(url, jobs)
    elif scenario == "sustained":
        record = await sustained(url, float(jobs))
    else:
        record = await drain(url, jobs)
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
