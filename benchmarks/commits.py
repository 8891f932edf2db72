"""CC1 (issue 21): server commits per step under concurrency, group commit on and off.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.commits            # S3 shape (1,000 x 3 steps) and S4 shape (c=50)

Each variant runs in this process on a fresh database, through the counting proxy of
``benchmarks/wire.py`` (which sees every commit the server acknowledges, read-only ones
included, and tells the writing ones apart). The proxy costs CPU, so only counts are
reported here; throughput is S3/S4's business (``python -m benchmarks -s S3 -s S4``).

* **S3 shape**: 1,000 workflows of 3 steps started at once from a nursery.
* **S4 shape**: a queue with worker concurrency 50, 1,000 one-step workflows enqueued
  from one task.

Counted over the timed window: commits, write commits, and both per step (steps = 3 per
workflow in S3, 1 in S4) and per workflow; and the batches group commit formed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import psycopg
import trio

from benchmarks import common, wire
from benchmarks.runner import fresh_database

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


async def _wait_done(url: str, name: str, n: int) -> None:
    def count() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM dbos.workflow_status WHERE name = %s AND status = 'SUCCESS'",
                (name,),
            ).fetchone()
        return int(row[0]) if row else 0

    with trio.fail_after(600):
        while await trio.to_thread.run_sync(count) < n:  # noqa: ASYNC110
            await trio.sleep(0.05)  # another connection's view: polling is the way


async def run_variant(url: str, shape: str, group_commit: bool, n: int) -> dict[str, Any]:
    import dbos_trio

    host, port = common.host_port(url)
    with wire.WireCounter(host, port) as proxy:
        dbos = dbos_trio.DBOS(
            dbos_trio.Config(
                app_name="commits",
                database_url=common.with_port(url, "127.0.0.1", proxy.port),
                group_commit=group_commit,
            )
        )

        @dbos.step(name="bench_step")
        async def bench_step(i: int) -> int:
            return i + 1

        @dbos.workflow(name="gc_s3")
        async def gc_s3(i: int) -> int:
            for j in range(3):
                i += await bench_step(j)
            return i

        @dbos.workflow(name="gc_s4")
        async def gc_s4(i: int) -> int:
            return await bench_step(i)

        queue = dbos.register_queue("gc_queue", worker_concurrency=50, polling_interval_sec=0.1)
        async with dbos.launched():
            await gc_s3(0)  # warm-up
            await (await queue.enqueue(gc_s4, 0)).get_result()
            before = proxy.snapshot()
            if shape == "S3":
                async with trio.open_nursery() as nursery:
                    for i in range(n):
                        nursery.start_soon(dbos.start_workflow, gc_s3, i)
                await _wait_done(url, "gc_s3", n + 1)
            else:
                for i in range(n):
                    await queue.enqueue(gc_s4, i)
                await _wait_done(url, "gc_s4", n + 1)
            diff = proxy.snapshot().minus(before)
    steps = n * (3 if shape == "S3" else 1)
    return {
        "shape": shape,
        "group_commit": group_commit,
        "workflows": n,
        "commits": diff.commits,
        "write_commits": diff.write_commits,
        "commits_per_step": round(diff.commits / steps, 3),
        "write_commits_per_step": round(diff.write_commits / steps, 3),
        "write_commits_per_workflow": round(diff.write_commits / n, 3),
        "round_trips_per_workflow": round(diff.round_trips / n, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.commits", description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--admin-url", default=ADMIN_URL)
    args = parser.parse_args(argv)
    for shape in ("S3", "S4"):
        for group_commit in (False, True):
            with fresh_database(args.admin_url, f"commits_{shape}", "dbos_trio", False) as url:
                record = trio.run(run_variant, url, shape, group_commit, args.n)
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
