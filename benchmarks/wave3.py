"""Issue 34's scenarios for dbos_trio alone: cross-process pickup, bulk enqueue, drain.

``python -m benchmarks.wave3 [--rounds N] [--jobs 5000]`` runs, per round and on a fresh
database each:

* **pickup**: a worker (this process, queue polled at the default 1 s, worker concurrency
  16) and a producer in another process (a ``Client``) enqueueing one workflow at a time
  at 20/s for 10 s; latency is from the producer's enqueue returning to the body starting
  (both read ``time.time()`` on one machine). Run twice: the producer NOTIFYing (wave 3)
  and with ``use_listen_notify=False`` (as before wave 3: found by polling).
* **bulk**: ``Client.enqueue_many`` of ``--jobs`` no-op rows, against the same number of
  concurrent ``Client.enqueue`` calls.
* **drain**: ``--jobs`` rows enqueued in bulk, then a worker at concurrency 16 started;
  the clock runs from launch until a watcher (its own connection, every 20 ms) counts them
  all SUCCESS.
* **sustained**: a worker here and a producer process of 16 tasks (a ``Client``), each
  enqueueing one workflow at a time as fast as it is answered, for ``--seconds`` (20):
  completions/s from 2 s in to the producer's end, and enqueue-to-start latency.

Each scenario runs dbos_trio and then pgqueuer 1.6 (``benchmarks/wave3_pgqueuer.py`` in its
own virtualenv, ``~/.cache/dbos_trio/bench-pgqueuer``: ``pip install pgqueuer==1.6.0``, or
``DBOS_BENCH_PGQUEUER_PYTHON``), interleaved, each on a fresh database. Each record carries
the machine's load average, as other work shares the machine. One JSON line per record on
stdout. Bulk and drain also run procrastinate 3.10 right after pgqueuer
(``benchmarks/wave3_procrastinate.py``, own virtualenv ``~/.cache/dbos_trio/bench-procrastinate``
or ``DBOS_BENCH_PROCRASTINATE_PYTHON``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

import psycopg
import trio

from benchmarks.common import median, percentile

ADMIN_URL = os.environ.get("DBOS_BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
APP = "wave3"
QUEUE = "w3"


def fresh_database() -> str:
    name = f"bench_w3_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_dbos(url: str, started: dict[str, float] | None = None) -> Any:
    from dbos_trio import DBOS, Config

    dbos = DBOS(Config(app_name=APP, database_url=url, app_version="w3", executor_id="w3-worker"))
    dbos.register_queue(QUEUE, worker_concurrency=16)

    @dbos.workflow(name="w3.noop")
    async def noop(i: int) -> int:
        if started is not None:
            started[dbos.workflow_id or ""] = time.time()
        return i

    return dbos


PRODUCER = r"""
import json, sys, time, trio
from dbos_trio import Client, EnqueueOptions
url, notify, rate, seconds = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), float(sys.argv[4])
async def main():
    sent = {}
    async with Client(url, app_name="wave3", use_listen_notify=notify) as client:
        options = EnqueueOptions(workflow_name="w3.noop", queue_name="w3")
        for i in range(3):  # warm-up
            await client.enqueue(options, -1)
        await trio.sleep(1.0)
        begin = trio.current_time()  # sleep_until reads Trio's clock, not time.monotonic
        for i in range(int(rate * seconds)):
            await trio.sleep_until(begin + i / rate)
            handle = await client.enqueue(options, i)
            sent[handle.workflow_id] = time.time()
        await trio.sleep(0.05)
    print(json.dumps(sent))
trio.run(main)
"""


async def pickup(url: str, notify: bool) -> dict[str, Any]:
    started: dict[str, float] = {}
    dbos = make_dbos(url, started)
    async with dbos.launched():
        proc = await trio.run_process(
            [sys.executable, "-c", PRODUCER, url, "1" if notify else "0", "20", "10"],
            capture_stdout=True,
        )
        sent: dict[str, float] = json.loads(proc.stdout)
        with trio.fail_after(30):
            while not all(wid in started for wid in sent):  # noqa: ASYNC110 - bodies record
                await trio.sleep(0.05)
    latencies = [1000 * (started[wid] - at) for wid, at in sent.items()]
    return {
        "scenario": "pickup",
        "library": "dbos_trio" if notify else "dbos_trio (producer without NOTIFY)",
        "producer_notifies": notify,
        "jobs": len(latencies),
        "median_ms": round(median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
    }


async def bulk(url: str, jobs: int) -> list[dict[str, Any]]:
    from dbos_trio import Client, EnqueueOptions

    await migrate(url)
    out = []
    options = EnqueueOptions(workflow_name="w3.noop", queue_name=QUEUE)
    async with Client(url, app_name=APP) as client:
        await client.enqueue_many(options, [(-1,)] * 10)  # warm-up
        begin = time.perf_counter()
        await client.enqueue_many(options, [(i,) for i in range(jobs)])
        elapsed = time.perf_counter() - begin
        out.append(
            {
                "scenario": "bulk",
                "api": "enqueue_many",
                "jobs": jobs,
                "per_s": round(jobs / elapsed),
                "seconds": round(elapsed, 3),
            }
        )
        begin = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for i in range(jobs):
                nursery.start_soon(client.enqueue, options, i)
        elapsed = time.perf_counter() - begin
        out.append(
            {
                "scenario": "bulk",
                "api": "concurrent enqueue",
                "jobs": jobs,
                "per_s": round(jobs / elapsed),
                "seconds": round(elapsed, 3),
            }
        )
    return out


async def drain(url: str, jobs: int) -> dict[str, Any]:
    from dbos_trio import Client, EnqueueOptions

    await migrate(url)
    async with Client(url, app_name=APP) as client:
        options = EnqueueOptions(workflow_name="w3.noop", queue_name=QUEUE)
        await client.enqueue_many(options, [(i,) for i in range(jobs)])
    dbos = make_dbos(url)
    # Observed from outside, as the other benchmarks' watchers do, on one connection held
    # open (a connection per look had cost the server a backend start every 20 ms).
    watcher = await trio.to_thread.run_sync(lambda: psycopg.connect(url, autocommit=True))
    try:
        begin = time.perf_counter()
        cpu = time.process_time()
        async with dbos.launched():
            with trio.fail_after(120):
                while await trio.to_thread.run_sync(succeeded_on, watcher) < jobs:  # noqa: ASYNC110
                    await trio.sleep(0.02)
            elapsed = time.perf_counter() - begin
            cpu = time.process_time() - cpu
    finally:
        watcher.close()
    return {
        "scenario": "drain",
        "concurrency": 16,
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
        "cpu_ms_per_job": round(1000 * cpu / jobs, 3),
    }


SUSTAINED_PRODUCER = r"""
import json, sys, time, trio
from dbos_trio import Client, EnqueueOptions
url, tasks, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
async def main():
    sent = {}
    async with Client(url, app_name="wave3") as client:
        options = EnqueueOptions(workflow_name="w3.noop", queue_name="w3")
        await client.enqueue(options, -1)
        deadline = time.monotonic() + seconds
        async def loop():
            while time.monotonic() < deadline:
                handle = await client.enqueue(options, 0)
                sent[handle.workflow_id] = time.time()
        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(loop)
    print(json.dumps(sent))
trio.run(main)
"""


async def sustained(url: str, seconds: float) -> dict[str, Any]:
    """A worker here (concurrency 16, default settings) and a producer process of 16
    tasks each enqueueing one workflow at a time for ``seconds``: completions/s from 2 s
    in to the producer's end, and enqueue-to-start latency."""
    started: dict[str, float] = {}
    dbos = make_dbos(url, started)
    async with dbos.launched():
        begin = time.time()
        proc = await trio.run_process(
            [sys.executable, "-c", SUSTAINED_PRODUCER, url, "16", str(seconds)],
            capture_stdout=True,
        )
        sent: dict[str, float] = json.loads(proc.stdout)
        with trio.fail_after(60):
            while not all(wid in started for wid in sent):  # noqa: ASYNC110 - bodies record
                await trio.sleep(0.05)
    window_start, window_end = begin + 2, begin + seconds
    done = [at for wid, at in started.items() if wid in sent and window_start <= at < window_end]
    latencies = [1000 * (started[wid] - at) for wid, at in sent.items()]
    return {
        "scenario": "sustained",
        "enqueued": len(sent),
        "completed_per_s": round(len(done) / (window_end - window_start)),
        "enqueued_per_s": round(len(sent) / seconds),
        "median_ms": round(median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
    }


def succeeded_on(conn: psycopg.Connection[Any]) -> int:
    query = "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
    row = conn.execute(query).fetchone()
    return 0 if row is None else int(row[0])


async def migrate(url: str) -> None:
    async with make_dbos(url).launched():
        pass


PGQUEUER_PYTHON = os.environ.get(
    "DBOS_BENCH_PGQUEUER_PYTHON",
    os.path.expanduser("~/.cache/dbos_trio/bench-pgqueuer/bin/python"),
)


PROCRASTINATE_PYTHON = os.environ.get(
    "DBOS_BENCH_PROCRASTINATE_PYTHON",
    os.path.expanduser("~/.cache/dbos_trio/bench-procrastinate/bin/python"),
)


def run_pgqueuer(scenario: str, url: str, jobs: int, library: str = "pgqueuer") -> dict[str, Any]:
    """A peer's run of ``scenario`` in its own virtualenv (benchmarks/wave3_<library>.py)."""
    script = os.path.join(os.path.dirname(__file__), f"wave3_{library}.py")
    python = PGQUEUER_PYTHON if library == "pgqueuer" else PROCRASTINATE_PYTHON
    done = subprocess.run(
        [python, script, scenario, url, str(jobs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    record: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return record


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--only", choices=["pickup", "bulk", "drain", "sustained"], default=None)
    parser.add_argument("--seconds", type=float, default=20.0, help="sustained producer's run")
    parser.add_argument("--no-pgqueuer", action="store_true")
    parser.add_argument("--no-procrastinate", action="store_true")
    args = parser.parse_args()
    peer = not args.no_pgqueuer and os.path.exists(PGQUEUER_PYTHON)
    procrastinate = not args.no_procrastinate and os.path.exists(PROCRASTINATE_PYTHON)

    def run_procrastinate(scenario: str, url: str) -> dict[str, Any] | None:
        if not procrastinate:
            return None
        return run_pgqueuer(scenario, url, args.jobs, "procrastinate")

    for round_no in range(args.rounds):
        # Interleaved: each scenario runs dbos_trio, then pgqueuer, on fresh databases.
        runs: list[tuple[str, Any]] = [
            ("pickup", lambda url: trio.run(pickup, url, True)),
            ("pickup", lambda url: trio.run(pickup, url, False)),
            ("pickup", lambda url: run_pgqueuer("pickup", url, args.jobs) if peer else None),
            ("bulk", lambda url: trio.run(bulk, url, args.jobs)),
            ("bulk", lambda url: run_pgqueuer("bulk", url, args.jobs) if peer else None),
            ("bulk", lambda url: run_procrastinate("bulk", url)),
            ("drain", lambda url: trio.run(drain, url, args.jobs)),
            ("drain", lambda url: run_pgqueuer("drain", url, args.jobs) if peer else None),
            ("drain", lambda url: run_procrastinate("drain", url)),
            ("sustained", lambda url: trio.run(sustained, url, args.seconds)),
            (
                "sustained",
                lambda url: run_pgqueuer("sustained", url, int(args.seconds)) if peer else None,
            ),
        ]
        for name, run in runs:
            if args.only not in (None, name):
                continue
            url = fresh_database()
            try:
                load = os.getloadavg()[0]
                result = run(url)
                if result is None:
                    continue
                for record in result if isinstance(result, list) else [result]:
                    record.setdefault("library", "dbos_trio")
                    record.update(round=round_no, load_avg_1m=round(load, 2))
                    print(json.dumps(record), flush=True)
            finally:
                drop_database(url)


if __name__ == "__main__":
    main()
