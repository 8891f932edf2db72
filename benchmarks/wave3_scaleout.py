"""Issue 34's scale-out: the drain and a sustained producer with 1, 2 and 4 worker processes.

``python -m benchmarks.wave3_scaleout [--rounds N] [--jobs 5000] [--seconds 10]`` runs, per
round, for each process count in an order rotated every round (interleaved), on a fresh
database each:

* **drain**: ``--jobs`` no-op rows enqueued in bulk (``Client.enqueue_many``), then N
  worker processes (each one executor, worker concurrency 16) are started and, once all
  have imported and registered, told to launch together; the clock runs from that signal
  until a watcher (its own connection, every 20 ms) counts every row SUCCESS. Right after
  each, pgqueuer 1.6 the same way (``benchmarks/wave3_pgqueuer.py fill`` then N ``worker``
  processes, its settings as in :mod:`benchmarks.wave3`, in its own virtualenv; done when
  its queue table is empty, as it deletes a job's row when the completion is flushed),
  unless ``--no-pgqueuer``.
* **sustained**: the N workers launched on an empty queue, then a producer process (a
  ``Client`` with 16 tasks, each enqueueing one workflow at a time, as fast as it is
  answered) for ``--seconds``; completions/s are counted by the watcher from 2 s in to the
  producer's end, and enqueue-to-start latency is from ``enqueue`` returning in the
  producer to the body starting in a worker (both read ``time.time()`` on one machine).

Per-job server cost, for the model in docs/performance.md: ``pg_stat_database`` deltas
of the benchmark's database (commits, rows returned/fetched/inserted/updated/deleted,
buffer hits) read after every process has disconnected (a backend flushes its counters
when it exits), and the CPU time (utime + stime from ``/proc``) of every backend serving
that database, sampled with each watcher tick (a backend's time is kept after it exits).
WAL writer, checkpointer and other shared processes are not counted. Workers report their
own process CPU. Each record carries the 1-minute load average before and after the run.
One JSON line per record on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import psycopg
import trio

from benchmarks.common import median, percentile
from benchmarks.wave3 import PGQUEUER_PYTHON, QUEUE, drop_database, fresh_database, migrate

WORKER = r"""
import json, sys, time, trio
from dbos_trio import DBOS, Config
url, name = sys.argv[1], sys.argv[2]
dbos = DBOS(Config(app_name="wave3", database_url=url, app_version="w3", executor_id=name))
dbos.register_queue("w3", worker_concurrency=16)
started = {}
@dbos.workflow(name="w3.noop")
async def noop(i: int) -> int:
    started[dbos.workflow_id or ""] = time.time()
    return i
async def main():
    print("ready", flush=True)
    await trio.to_thread.run_sync(sys.stdin.readline)
    cpu = time.process_time()
    async with dbos.launched():
        print("launched", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
    cpu = time.process_time() - cpu
    print(json.dumps({"cpu_s": cpu, "started": started}), flush=True)
trio.run(main)
"""

PRODUCER = r"""
import json, sys, time, trio
from dbos_trio import Client, EnqueueOptions
url, tasks, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
async def main():
    sent = {}
    async with Client(url, app_name="wave3") as client:
        options = EnqueueOptions(workflow_name="w3.noop", queue_name="w3")
        await client.enqueue(options, -1)
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        deadline = time.monotonic() + seconds
        async def loop():
            while time.monotonic() < deadline:
                handle = await client.enqueue(options, 0)
                sent[handle.workflow_id] = time.time()
        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(loop)
    print(json.dumps({"sent": sent}), flush=True)
trio.run(main)
"""

STAT_COLUMNS = (
    "xact_commit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "blks_hit",
    "blks_read",
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SUCCEEDED = "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"


def db_stats(url: str) -> dict[str, int]:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT {', '.join(STAT_COLUMNS)} FROM pg_stat_database WHERE datname = %s",
            (name,),
        ).fetchone()
    assert row is not None
    return dict(zip(STAT_COLUMNS, (int(v) for v in row), strict=True))


class Watcher:
    """One connection: counts SUCCESS rows and samples the CPU of the database's backends."""

    def __init__(self, url: str, done_sql: str = SUCCEEDED) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.done_sql = done_sql
        self.name = url.rsplit("/", 1)[1]
        self.cpu_ticks: dict[int, int] = {}

    def tick(self) -> int:
        pids = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (self.name,),
        ).fetchall()
        for (pid,) in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # utime and stime are fields 14 and 15 of stat; [0] here is field 3.
            self.cpu_ticks[pid] = int(fields[11]) + int(fields[12])
        row = self.conn.execute(self.done_sql).fetchone()
        return 0 if row is None else int(row[0])

    def server_cpu_s(self) -> float:
        return sum(self.cpu_ticks.values()) / CLOCK_TICKS

    def close(self) -> None:
        self.conn.close()


def spawn(script: str, *args: str, python: str = sys.executable) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [python, *(["-c", script] if script else []), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_line(proc: subprocess.Popen[str], expected: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != expected:
        raise RuntimeError(f"expected {expected!r} from a benchmark process, got {line!r}")


def signal(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate("stop\n", timeout=120)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def per_job(stats: dict[str, int], jobs: int) -> dict[str, float]:
    return {f"{key}_per_job": round(value / jobs, 2) for key, value in stats.items()}


def drain(url: str, workers: int, jobs: int, peer: bool = False) -> dict[str, Any]:
    from dbos_trio import Client, EnqueueOptions

    async def fill() -> None:
        await migrate(url)
        async with Client(url, app_name="wave3") as client:
            options = EnqueueOptions(workflow_name="w3.noop", queue_name=QUEUE)
            await client.enqueue_many(options, [(i,) for i in range(jobs)])

    if peer:
        script = os.path.join(os.path.dirname(__file__), "wave3_pgqueuer.py")
        subprocess.run(
            [PGQUEUER_PYTHON, script, "fill", url, str(jobs)],
            check=True,
            timeout=120,
            capture_output=True,
        )
        procs = [
            spawn("", script, "worker", url, "0", python=PGQUEUER_PYTHON) for _ in range(workers)
        ]
        # pgqueuer deletes a job's row when its completion is flushed.
        done_sql = f"SELECT {jobs} - count(*) FROM pgqueuer"
    else:
        trio.run(fill)
        procs = [spawn(WORKER, url, f"w3-worker-{n}") for n in range(workers)]
        done_sql = SUCCEEDED
    for proc in procs:
        wait_line(proc, "ready")
    before = db_stats(url)
    watcher = Watcher(url, done_sql)
    begin = time.perf_counter()
    for proc in procs:
        signal(proc)
    deadline = begin + 180
    while watcher.tick() < jobs:
        if time.perf_counter() > deadline:
            raise RuntimeError("drain did not finish in 180 s")
        time.sleep(0.02)
    elapsed = time.perf_counter() - begin
    watcher.tick()
    results = [finish(proc) for proc in procs]
    server_cpu = watcher.server_cpu_s()
    watcher.close()
    after = db_stats(url)
    delta = {key: after[key] - before[key] for key in STAT_COLUMNS}
    return {
        "scenario": "drain",
        "workers": workers,
        "concurrency_per_worker": 16,
        "jobs": jobs,
        "per_s": round(jobs / elapsed),
        "seconds": round(elapsed, 3),
        "client_cpu_ms_per_job": round(1000 * sum(r["cpu_s"] for r in results) / jobs, 3),
        "server_cpu_ms_per_job": round(1000 * server_cpu / jobs, 3),
        "jobs_per_worker": [
            r["started"] if isinstance(r["started"], int) else len(r["started"]) for r in results
        ],
        **per_job(delta, jobs),
    }


def sustained(url: str, workers: int, seconds: float) -> dict[str, Any]:
    trio.run(migrate, url)
    procs = [spawn(WORKER, url, f"w3-worker-{n}") for n in range(workers)]
    for proc in procs:
        wait_line(proc, "ready")
    for proc in procs:
        signal(proc)
    for proc in procs:
        wait_line(proc, "launched")
    producer = spawn(PRODUCER, url, "16", str(seconds))
    wait_line(producer, "ready")
    before = db_stats(url)
    watcher = Watcher(url)
    begin = time.perf_counter()
    signal(producer)
    samples: list[tuple[float, int]] = []
    while producer.poll() is None and time.perf_counter() - begin < seconds + 60:
        samples.append((time.perf_counter() - begin, watcher.tick()))
        if samples[-1][0] >= seconds:
            break
        time.sleep(0.05)
    out, _ = producer.communicate(timeout=60)
    sent: dict[str, float] = json.loads(out.strip().splitlines()[-1])["sent"]
    # Let the workers finish what was enqueued (the backlog left shows who kept up).
    at_end = watcher.tick()
    backlog = len(sent) + 1 - at_end
    drain_deadline = time.perf_counter() + 120
    while watcher.tick() < len(sent) + 1 and time.perf_counter() < drain_deadline:
        time.sleep(0.05)
    results = [finish(proc) for proc in procs]
    server_cpu = watcher.server_cpu_s()
    watcher.close()
    after = db_stats(url)
    delta = {key: after[key] - before[key] for key in STAT_COLUMNS}
    window = [(t, n) for t, n in samples if t >= 2.0]
    rate = 0.0
    if len(window) > 1:
        rate = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
    started: dict[str, float] = {}
    for r in results:
        started.update(r["started"])
    latencies = [1000 * (started[wid] - at) for wid, at in sent.items() if wid in started]
    return {
        "scenario": "sustained",
        "workers": workers,
        "producer_tasks": 16,
        "seconds": seconds,
        "enqueued": len(sent),
        "enqueued_per_s": round(len(sent) / seconds),
        "completions_per_s": round(rate),
        "backlog_at_end": backlog,
        "latency_median_ms": round(median(latencies), 2) if latencies else None,
        "latency_p99_ms": round(percentile(latencies, 0.99), 2) if latencies else None,
        "worker_cpu_ms_per_job": round(1000 * sum(r["cpu_s"] for r in results) / len(sent), 3),
        "server_cpu_ms_per_job": round(1000 * server_cpu / len(sent), 3),
        **per_job(delta, len(sent)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--only", choices=["drain", "sustained"], default=None)
    parser.add_argument("--no-pgqueuer", action="store_true")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    peer = not args.no_pgqueuer and os.path.exists(PGQUEUER_PYTHON)
    for round_no in range(args.rounds):
        shift = round_no % len(counts)
        order = counts[shift:] + counts[:shift]  # interleaved: rotate each round
        for scenario in ("drain", "sustained"):
            if args.only not in (None, scenario):
                continue
            # pgqueuer (drain only) right after dbos_trio at the same process count.
            runs = [(w, False) for w in order]
            if scenario == "drain" and peer:
                runs = [(w, p) for w in order for p in (False, True)]
            for workers, pgqueuer in runs:
                url = fresh_database()
                try:
                    load = os.getloadavg()[0]
                    if scenario == "drain":
                        record = drain(url, workers, args.jobs, pgqueuer)
                    else:
                        record = sustained(url, workers, args.seconds)
                    record.update(
                        library="pgqueuer" if pgqueuer else "dbos_trio",
                        round=round_no,
                        load_avg_1m=round(load, 2),
                        load_avg_1m_after=round(os.getloadavg()[0], 2),
                    )
                    print(json.dumps(record), flush=True)
                finally:
                    drop_database(url)


if __name__ == "__main__":
    main()
