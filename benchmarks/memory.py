"""M1/M2 (issue 21): resident memory per waiting workflow and per queued one.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.memory                 # both cases, 10,000 each, PostgreSQL
    python -m benchmarks.memory --n 2000 --case recv --backend sqlite

* **M1, recv waiters**: ``n`` workflows started in one process, each blocked in
  ``dbos.recv`` (60 min timeout). Counted as waiting once every one's ``DBOS.sleep``
  deadline checkpoint is in (a second later, to let the last ones park).
* **M2, queued, not running**: a queue with worker concurrency 1 whose one running
  workflow blocks; ``n`` more enqueued behind it from the same process, which serves
  the queue (so its dequeue loop sees the backlog).

Each case runs in a fresh process on a fresh database: launch, a warm-up of 200 of the
same (released again, so imports, pools and the allocator's arenas are paid for), a
``gc.collect()`` and the baseline reading of the current RSS (``/proc/self/statm``), then
the ``n`` and a second reading. The figure is (second - baseline) / n: what each one
costs while it waits. Handles returned by ``start_workflow``/``enqueue`` are dropped, as
a fire-and-forget caller would; the issue's target is < 10 KB each.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import trio

from benchmarks.runner import fresh_database

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
WARMUP = 200


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _count(url: str, sql: str) -> int:
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url[len("sqlite:///") :], timeout=30) as raw:
            return int(raw.execute(sql.replace("dbos.", "")).fetchone()[0])
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
        assert row is not None
        return int(row[0])


async def _until(url: str, sql: str, target: int, timeout: float = 600.0) -> None:
    with trio.fail_after(timeout):
        while await trio.to_thread.run_sync(_count, url, sql) < target:  # noqa: ASYNC110
            await trio.sleep(0.2)  # another connection's rows: polling is the only way


async def _settled() -> int:
    await trio.sleep(1.0)
    gc.collect()
    return rss_bytes()


async def case_recv(url: str, n: int, burst: int = 0) -> dict[str, Any]:
    import dbos_trio

    dbos = dbos_trio.DBOS(dbos_trio.Config(app_name="memory", database_url=url))

    @dbos.workflow(name="mem_waiter")
    async def mem_waiter() -> Any:
        return await dbos.recv("wake", timeout_seconds=3600)

    sleeps = "SELECT count(*) FROM dbos.operation_outputs WHERE function_name = 'DBOS.sleep'"
    async with dbos.launched():

        async def start(count: int, tag: str) -> list[str]:
            ids = [f"{tag}-{i}" for i in range(count)]
            for first in range(0, count, burst or count):
                async with trio.open_nursery() as nursery:
                    for wid in ids[first : first + (burst or count)]:

                        async def one(wid: str = wid) -> None:
                            with dbos_trio.SetWorkflowID(wid):
                                await dbos.start_workflow(mem_waiter)

                        nursery.start_soon(one)
            return ids

        warm = await start(WARMUP, "warm")
        await _until(url, sleeps, WARMUP)
        for wid in warm:
            await dbos.send(wid, "go", "wake")
        for wid in warm:
            await dbos.retrieve_workflow(wid)
        await _until(
            url, "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'", WARMUP
        )
        del warm
        before = await _settled()
        t0 = time.perf_counter()
        await start(n, "wait")
        await _until(url, sleeps, WARMUP + n)
        after = await _settled()
        started_s = time.perf_counter() - t0
        tasks = trio.lowlevel.current_statistics().tasks_living
    return _figures(
        "recv waiter", n, before, after, started_s=round(started_s, 2), tasks_living=tasks
    )


async def case_queued(url: str, n: int, burst: int = 0) -> dict[str, Any]:
    import dbos_trio

    dbos = dbos_trio.DBOS(dbos_trio.Config(app_name="memory", database_url=url))
    queue = dbos.register_queue("mem_queue", worker_concurrency=1, polling_interval_sec=0.1)
    release = trio.Event()
    running = trio.Event()

    @dbos.workflow(name="mem_blocker")
    async def mem_blocker() -> None:
        running.set()
        await release.wait()

    @dbos.workflow(name="mem_queued")
    async def mem_queued(i: int) -> int:
        return i

    done = "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
    async with dbos.launched():
        for i in range(WARMUP):
            await queue.enqueue(mem_queued, i)
        await _until(url, done, WARMUP)
        await queue.enqueue(mem_blocker)
        await running.wait()
        before = await _settled()
        t0 = time.perf_counter()
        for i in range(n):
            await queue.enqueue(mem_queued, i)
        after = await _settled()
        enqueue_s = time.perf_counter() - t0
        waiting = _count(url, "SELECT count(*) FROM dbos.workflow_status WHERE status = 'ENQUEUED'")
        if waiting != n:
            raise RuntimeError(f"{waiting} ENQUEUED rows, expected {n}")
        release.set()
    return _figures("queued workflow", n, before, after, enqueue_s=round(enqueue_s, 2))


def _figures(what: str, n: int, before: int, after: int, **extra: Any) -> dict[str, Any]:
    return {
        "what": what,
        "n": n,
        "rss_before_mb": round(before / 2**20, 1),
        "rss_after_mb": round(after / 2**20, 1),
        "bytes_each": round((after - before) / n),
        **extra,
    }


CASES = {"recv": case_recv, "queued": case_queued}


@contextlib.contextmanager
def _fresh_url(backend: str, admin: str, tmp: str, case: str) -> Iterator[str]:
    """A fresh system database's URL: an SQLite file in ``tmp``, or a scratch PostgreSQL
    database (dropped afterwards)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp}/memory-{uuid.uuid4().hex[:8]}.sqlite"
        return
    with fresh_database(admin, f"memory_{case}", "dbos_trio", False) as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--burst",
        type=int,
        default=0,
        help="M1: start the waiters this many at a time (default 0: all at once)",
    )
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--child-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_url:  # one case, in this (fresh) process
        (case,) = args.case
        print(json.dumps(trio.run(CASES[case], args.child_url, args.n, args.burst)))
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.case or sorted(CASES):
            with _fresh_url(args.backend, args.admin_url, tmp, case) as url:
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "benchmarks.memory",
                        "--case",
                        case,
                        "--n",
                        str(args.n),
                        "--burst",
                        str(args.burst),
                        "--child-url",
                        url,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=1200,
                )
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                return 1
            record = json.loads(out.stdout.strip().splitlines()[-1])
            record.update(case=case, backend=args.backend)
            results.append(record)
            print(json.dumps(record), flush=True)
    for r in results:
        print(
            f"{r['backend']} {r['what']}: {r['bytes_each'] / 1024:.2f} KiB each "
            f"({r['n']}: {r['rss_before_mb']} -> {r['rss_after_mb']} MiB)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
